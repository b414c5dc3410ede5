package dirlife

import (
	"os"
	"slices"
	"sync"

	"leasekit.dev/dirlife/internal/sys"

	"leasekit.dev/dirlife/internal/removal"
)

// A lockMode says how a method holds the root's lock.
type lockMode int

const (
	shared    lockMode = iota // Write: many at once
	exclusive                 // Prune, Reset: alone
)

// A rootKey identifies a root directory within the machine.
type rootKey = sys.Key

// A rootState is this process's state for one root directory, shared by
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
type rootState struct {
	key  rootKey
	refs int // guarded by registry.mu

	rw sync.RWMutex // shared: Writes; exclusive: Prune, Reset

	mu         sync.Mutex // guards the fields below; held while taking the shared system lock
	sharedN    int        // shared holders in this process
	sharedDir  *os.File   // the descriptor holding the shared system lock while sharedN > 0
	sharedLock sys.Lock

	rm removal.Removals
}

// registry maps root keys to this process's states.
var registry = struct {
	mu    sync.Mutex
	roots map[rootKey]*rootState
	// unreported lists, oldest first, the keys of states that no call
	// references and that are kept only for failures not reported yet:
	// at most maxUnreportedRoots.
	unreported []rootKey
}{roots: map[rootKey]*rootState{}}

// maxUnreportedRoots bounds the roots whose state this process keeps,
// when no call uses them, only to report their failed removals: a process
// that uses many roots and never settles them keeps no more.
const maxUnreportedRoots = 16

// getState returns the state for key, creating it, with one more reference.
func getState(key rootKey) *rootState {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st := registry.roots[key]
	if st == nil {
		st = &rootState{key: key}
		registry.roots[key] = st
	}
	st.refs++
	return st
}

// lookupState returns the state for key with one more reference, or nil
// when this process has none.
func lookupState(key rootKey) *rootState {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st := registry.roots[key]
	if st != nil {
		st.refs++
	}
	return st
}

// putState drops a reference; the last one forgets the state, unless its
// remover has a failure still to report: then it is kept, among at most
// maxUnreportedRoots such states, the oldest forgotten first.
func putState(st *rootState) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	st.refs--
	if st.refs > 0 {
		return
	}
	registry.unreported = slices.DeleteFunc(registry.unreported, func(k rootKey) bool { return k == st.key })
	if !st.rm.HasErr() {
		delete(registry.roots, st.key)
		return
	}
	registry.unreported = append(registry.unreported, st.key)
	for len(registry.unreported) > maxUnreportedRoots {
		old := registry.unreported[0]
		registry.unreported = registry.unreported[1:]
		if o := registry.roots[old]; o != nil && o.refs == 0 {
			delete(registry.roots, old)
		}
	}
}

// A rootLock is a held lock on a root: in process and on the system.
type rootLock struct {
	st   *rootState
	mode lockMode
	dir  *os.File // exclusive: the descriptor holding the system lock
	held sys.Lock
}

// lockRoot takes the lock of the root r in mode, blocking until it can.
// dir is a descriptor of r's directory; lockRoot takes it over, closing it
// on failure or at release.
func lockRoot(r *os.Root, dir *os.File, key rootKey, mode lockMode) (*rootLock, error) {
	st := getState(key)
	if mode == exclusive {
		st.rw.Lock()
		held, err := sys.Acquire(r, dir, true)
		if err != nil {
			st.rw.Unlock()
			dir.Close()
			putState(st)
			return nil, err
		}
		return &rootLock{st: st, mode: exclusive, dir: dir, held: held}, nil
	}
	st.rw.RLock()
	st.mu.Lock()
	if st.sharedN == 0 {
		held, err := sys.Acquire(r, dir, false)
		if err != nil {
			st.mu.Unlock()
			st.rw.RUnlock()
			dir.Close()
			putState(st)
			return nil, err
		}
		st.sharedDir, st.sharedLock = dir, held
	} else {
		dir.Close()
	}
	st.sharedN++
	st.mu.Unlock()
	return &rootLock{st: st, mode: shared}, nil
}

// release releases the lock.
func (l *rootLock) release() {
	st := l.st
	if l.mode == exclusive {
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
	putState(st)
}
