package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// maxPending bounds the batches of garbage (one per Prune or rewrite) a
// root's remover may have queued: a Prune or Write that would queue more
// waits (outside the lock) for it to catch up, so garbage never piles up
// faster than it is removed.
const maxPending = 8

// A remover removes a root's garbage (pruned and replaced trees, already
// out of every ID's path) in the background: one goroutine per root and
// process at most, running while there is work.
type remover struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when the queue shrinks or empties
	queue   []removal
	busy    map[string]bool // names queued or being removed
	running bool
	errs    []failure // failures not reported yet, at most maxErrs
	dropped int       // failures beyond maxErrs, counted only
}

// A failure is a failed removal of the garbage entry name of a root.
type failure struct {
	name string
	err  error
}

// maxErrs bounds the failures a remover keeps for its next report.
const maxErrs = 16

// A removal is a batch of garbage entries of a root.
type removal struct {
	r     *os.Root // a handle of the root of its own, closed by the remover
	names []string
	dev   uint64
	devOf func(fs.FileInfo) uint64
	root  string // Root as given, for errors
}

func (rm *remover) init() {
	rm.cond = sync.NewCond(&rm.mu)
	rm.busy = map[string]bool{}
}

func (rm *remover) hasErr() bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return len(rm.errs) > 0
}

// isBusy reports whether name is queued or being removed.
func (rm *remover) isBusy(name string) bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.busy[name]
}

// takeErr returns and forgets the failures not reported yet whose garbage
// entry r still holds: a failure whose entry is gone is moot, and an
// entry missing from r is another root's (a root deleted, and r made
// since with its inode number). A nil r keeps them all.
func (rm *remover) takeErr(r *os.Root) error {
	rm.mu.Lock()
	fails, dropped := rm.errs, rm.dropped
	rm.errs, rm.dropped = nil, 0
	rm.mu.Unlock()
	var errs []error
	for _, f := range fails {
		if r != nil {
			if _, err := r.Lstat(f.name); errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		errs = append(errs, f.err)
	}
	if dropped > 0 && len(errs) > 0 {
		errs = append(errs, fmt.Errorf("dirlife: and %d more removals failed", dropped))
	}
	return errors.Join(errs...)
}

// wait blocks until the queue is empty and nothing is being removed.
func (rm *remover) wait() {
	rm.mu.Lock()
	for rm.running {
		rm.cond.Wait()
	}
	rm.mu.Unlock()
}

// enqueue hands the garbage names of h's root to st's remover as one
// batch, starting it if it is idle. It waits while maxPending batches are
// queued. The batch gets a handle of the root of its own, so the caller
// may release h at once.
func (l Layout[ID]) enqueue(st *rootState, h *openRoot, names []string) error {
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	r, err := h.r.OpenRoot(".")
	if err != nil {
		return fmt.Errorf("dirlife: remove garbage in %s: %w", l.Root, err)
	}
	rm := &st.rm
	rm.mu.Lock()
	for len(rm.queue) >= maxPending {
		rm.cond.Wait()
	}
	rm.queue = append(rm.queue, removal{r: r, names: names, dev: dev, devOf: l.devOf(), root: l.Root})
	for _, name := range names {
		rm.busy[name] = true
	}
	start := !rm.running
	rm.running = true
	rm.mu.Unlock()
	if start {
		st.retain() // the caller holds a reference: st is still registered
		go rm.run(st)
	}
	return nil
}

// run removes queued garbage until there is none, then ends.
func (rm *remover) run(st *rootState) {
	defer putState(st)
	rm.mu.Lock()
	for len(rm.queue) > 0 {
		job := rm.queue[0]
		rm.queue = rm.queue[1:]
		rm.cond.Broadcast()
		rm.mu.Unlock()

		for _, name := range job.names {
			err := removeTree(job.r, name, name, job.dev, job.devOf)
			rm.mu.Lock()
			delete(rm.busy, name)
			switch {
			case err == nil:
			case len(rm.errs) < maxErrs:
				rm.errs = append(rm.errs, failure{name, removeErr(job.root, name, err)})
			default:
				rm.dropped++
			}
			rm.mu.Unlock()
		}
		job.r.Close()
		rm.mu.Lock()
	}
	rm.running = false
	rm.cond.Broadcast()
	rm.mu.Unlock()
}

// retain adds a reference to a state already referenced.
func (st *rootState) retain() {
	registry.mu.Lock()
	st.refs++
	registry.mu.Unlock()
}

// rootDevice returns the device of h's root, as devOf reports it.
func rootDevice(h *openRoot, devOf func(fs.FileInfo) uint64) (uint64, error) {
	fi, err := h.dir.Stat()
	if err != nil {
		return 0, err
	}
	return devOf(fi), nil
}

// removeErr wraps a failed removal of the garbage entry name.
func removeErr(root, name string, err error) error {
	var me *MountError
	if errors.As(err, &me) {
		if me.Root == "" {
			me.Root = root
		}
		return me
	}
	return fmt.Errorf("dirlife: remove %s: %w", filepath.Join(root, name), err)
}

// Settle waits until the removals of garbage that this process's Prunes
// and Writes on Root started in the background are done, and returns
// their failures not yet reported (by an earlier Settle or Prune). After
// Settle, if no other call runs, Root holds only ID directories (and,
// where the filesystem holds no extended attribute, the marker file; on
// Windows, the lock file). A missing Root is not an error.
//
// Removals started by another process are not waited for; that process's
// own Settle does.
//
// A failure is reported only while what the removal left is still in
// Root. The process keeps the failures of at most 16 roots that no call
// uses any more, forgetting the oldest first; what their removals left is
// removed all the same by the next Prune.
func (l Layout[ID]) Settle() error {
	if exists, err := checkRoot("settle", l.Root); err != nil || !exists {
		return err
	}
	r, err := os.OpenRoot(l.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	defer r.Close()
	dir, err := r.Open(".")
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	key, err := keyOf(dir)
	dir.Close()
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	st := lookupState(key)
	if st == nil {
		return nil
	}
	defer putState(st)
	st.rm.wait()
	return st.rm.takeErr(r)
}
