// Package rootlock holds a process's locks on root directories and its
// state for each: an in-process reader/writer lock in front of the
// system's lock (flock(2), or LockFileEx on Windows), and the removals of
// the root's garbage under way. Every holder of one root in a process
// shares one State, found by the root directory's identity ([sys.Key]), so
// goroutines wait parked, not in the kernel: a shared holder joins the
// process's shared system lock, and only the first one, or the one
// Exclusive holder, waits in the system call.
package rootlock

import (
	"os"
	"slices"
	"sync"

	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/sys"
)

// A Mode says how a lock is held.
type Mode int

const (
	Shared    Mode = iota // Write: many at once
	Exclusive             // Prune, Reset: alone
)

// A State is this process's state for one root directory, shared by
// every Layout whose Root resolves to it: the in-process reader/writer lock
// in front of the system lock, the system lock held on behalf of the
// process's shared holders, and the removals of the root's garbage under
// way.
//
// The in-process lock makes goroutines wait parked, not in the kernel: a
// shared holder joins the process's existing shared system lock, and only
// the first one, or the one exclusive holder, waits in flock(2). So at most
// one OS thread per root and process is ever blocked on the system lock,
// however many goroutines wait.
type State struct {
	key  sys.Key
	refs int // guarded by registry.mu

	rw sync.RWMutex // shared: Writes; Exclusive: Prune, Reset

	mu         sync.Mutex // guards the fields below; held while taking the shared system lock
	sharedN    int        // shared holders in this process
	sharedDir  *os.File   // the descriptor holding the shared system lock while sharedN > 0
	sharedLock sys.Lock

	Removals removal.Removals
}

// registry maps root keys to this process's states.
var registry = struct {
	mu    sync.Mutex
	roots map[sys.Key]*State
	// unreported lists, oldest first, the keys of states that no call
	// references and that are kept only for failures not reported yet:
	// at most MaxUnreported.
	unreported []sys.Key
}{roots: map[sys.Key]*State{}}

// MaxUnreported bounds the roots whose state this process keeps,
// when no call uses them, only to report their failed removals: a process
// that uses many roots and never settles them keeps no more.
const MaxUnreported = 16

// Get returns the state for key, creating it, with one more reference.
func Get(key sys.Key) *State {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st := registry.roots[key]
	if st == nil {
		st = &State{key: key}
		registry.roots[key] = st
	}
	st.refs++
	return st
}

// Lookup returns the state for key with one more reference, or nil
// when this process has none.
func Lookup(key sys.Key) *State {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st := registry.roots[key]
	if st != nil {
		st.refs++
	}
	return st
}

// Put drops a reference; the last one forgets the state, unless its
// remover has a failure still to report: then it is kept, among at most
// MaxUnreported such states, the oldest forgotten first.
func Put(st *State) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st.refs--
	if st.refs > 0 {
		return
	}
	registry.unreported = slices.DeleteFunc(registry.unreported, func(k sys.Key) bool { return k == st.key })
	if !st.Removals.HasErr() {
		delete(registry.roots, st.key)
		return
	}
	registry.unreported = append(registry.unreported, st.key)
	for len(registry.unreported) > MaxUnreported {
		old := registry.unreported[0]
		registry.unreported = registry.unreported[1:]
		if o := registry.roots[old]; o != nil && o.refs == 0 {
			delete(registry.roots, old)
		}
	}
}

// A Lock is a held lock on a root: in process and on the system.
type Lock struct {
	St   *State
	mode Mode
	dir  *os.File // Exclusive: the descriptor holding the system lock
	held sys.Lock
}

// Acquire takes the lock of the root r in mode, blocking until it can.
// dir is a descriptor of r's directory; Acquire takes it over, closing it
// on failure or at release.
func Acquire(r *os.Root, dir *os.File, key sys.Key, mode Mode) (*Lock, error) {
	st := Get(key)
	if mode == Exclusive {
		st.rw.Lock()
		held, err := sys.Acquire(r, dir, true)
		if err != nil {
			st.rw.Unlock()
			dir.Close()
			Put(st)
			return nil, err
		}
		return &Lock{St: st, mode: Exclusive, dir: dir, held: held}, nil
	}
	st.rw.RLock()
	st.mu.Lock()
	if st.sharedN == 0 {
		held, err := sys.Acquire(r, dir, false)
		if err != nil {
			st.mu.Unlock()
			st.rw.RUnlock()
			dir.Close()
			Put(st)
			return nil, err
		}
		st.sharedDir, st.sharedLock = dir, held
	} else {
		dir.Close()
	}
	st.sharedN++
	st.mu.Unlock()
	return &Lock{St: st, mode: Shared}, nil
}

// Release releases the lock.
func (l *Lock) Release() {
	st := l.St
	if l.mode == Exclusive {
		l.held.Release()
		l.dir.Close()
		st.rw.Unlock()
	} else {
		st.mu.Lock()
		st.sharedN--
		if st.sharedN == 0 {
			st.sharedLock.Release()
			st.sharedDir.Close()
			st.sharedDir, st.sharedLock = nil, sys.Lock{}
		}
		st.mu.Unlock()
		st.rw.RUnlock()
	}
	Put(st)
}

// Retain adds a reference to a state already referenced.
func (st *State) Retain() {
	registry.mu.Lock()
	st.refs++
	registry.mu.Unlock()
}

// Registered returns the number of roots whose state this process keeps,
// and whether it keeps key's.
func Registered(key sys.Key) (n int, kept bool) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return len(registry.roots), registry.roots[key] != nil
}
