package dirlife

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRemovalDeadline is the removal deadline of a Layout whose
// RemovalDeadline is zero.
const DefaultRemovalDeadline = 30 * time.Second

// stepRemoveTree is the removal of a garbage entry on the pool, as the fault
// seam names it, with the entry's name in Root (its aside name): a failure
// the seam returns is the removal's, and leaves the entry whole.
const stepRemoveTree = "remove-tree"

// maxRemovers bounds the goroutines that remove garbage in this process,
// for every root and call together: the workers that take removals in
// turn and the helpers that the top of a tree takes for its entries (see
// removeEach). A stuck removal holds its goroutine, and so its slot;
// the others go on with the rest, and once every slot is held a removal
// waits for one.
const maxRemovers = 4

// removers is this process's pool of removal goroutines.
var removers struct {
	mu      sync.Mutex
	running int         // goroutines removing, at most maxRemovers
	queue   []removeJob // removals waiting for a goroutine, oldest first; empty while running < maxRemovers
	peak    int         // the most goroutines running at once, for tests
}

// A removeJob is one removal and the batch it belongs to.
type removeJob struct {
	rm *removal
	b  *removeBatch
}

// A removeBatch is the removals one call started on one root.
type removeBatch struct {
	root  string   // the root as given, for errors
	r     *os.Root // a handle of the root of the batch's own; closed by the last removal
	dev   uint64
	devOf func(fs.FileInfo) uint64
	hook  func(was string)
	fault faultFunc
	st    *rootState   // referenced until the last removal is over
	left  atomic.Int64 // removals not over
}

// run removes j's entry and records the result.
func (j removeJob) run() {
	b := j.b
	if b.hook != nil {
		b.hook(j.rm.was)
	}
	var err error
	if b.fault != nil {
		err = b.fault(stepRemoveTree, j.rm.name)
	}
	if err == nil {
		err = removeTree(b.r, j.rm.name, j.rm.name, b.dev, b.devOf)
	}
	if err != nil {
		err = removeErr(b.root, j.rm.name, err)
	}
	last := b.left.Add(-1) == 0
	if last {
		// No removal uses r any more. Closed before a waiter wakes, so
		// that a call that waited returns holding no descriptor of it.
		b.r.Close()
	}
	b.st.rm.finish(j.rm, err)
	if last {
		putState(b.st)
	}
}

// startRemovals hands jobs to the pool: each gets a goroutine of its own
// while the pool has slots free, and the rest wait, in order, for a
// goroutine that is done with its own.
func startRemovals(jobs []removeJob) {
	removers.mu.Lock()
	n := min(len(jobs), maxRemovers-removers.running)
	removers.queue = append(removers.queue, jobs[n:]...)
	removers.running += n
	removers.peak = max(removers.peak, removers.running)
	removers.mu.Unlock()
	for _, j := range jobs[:n] {
		go removeLoop(j)
	}
}

// removeLoop runs j, then every removal waiting for a goroutine, until
// none waits; then it gives its slot back.
func removeLoop(j removeJob) {
	for {
		j.run()
		var ok bool
		if j, ok = nextRemoval(); !ok {
			return
		}
	}
}

// nextRemoval returns the oldest removal waiting for a goroutine, or,
// when none waits, gives the caller's slot back and returns false.
func nextRemoval() (removeJob, bool) {
	removers.mu.Lock()
	defer removers.mu.Unlock()
	if len(removers.queue) == 0 {
		removers.running--
		return removeJob{}, false
	}
	j := removers.queue[0]
	removers.queue[0] = removeJob{}
	removers.queue = removers.queue[1:]
	return j, true
}

// takeHelper takes a slot of the pool for a helper goroutine, if one is
// free and no removal waits for it.
func takeHelper() bool {
	removers.mu.Lock()
	defer removers.mu.Unlock()
	if removers.running == maxRemovers || len(removers.queue) > 0 {
		return false
	}
	removers.running++
	removers.peak = max(removers.peak, removers.running)
	return true
}

// maxErrs bounds the failures a root keeps for its next report.
const maxErrs = 16

// A removal is the removal of one garbage entry of a root, set aside under
// a name of its own: at most one is in flight per entry in this process,
// and it goes on, on its goroutine, whoever stops waiting for it. Each
// call that waits for it, the one that started it and those that found
// it under way, is counted in waiters until it stops waiting; its failure
// goes to every call counted when it ends, and to the root's report when
// none is.
type removal struct {
	name string        // its aside name in Root, where it is removed
	was  string        // its name when it was set aside: an ID's directory, a staging directory, …
	done chan struct{} // closed when the attempt returns

	// Guarded by the removals' mu.
	err      error
	finished bool
	waiters  int // calls waiting for it
}

// removals are this process's removals of one root's garbage.
type removals struct {
	mu       sync.Mutex
	inflight map[string]*removal // by aside name
	errs     []failure           // failures that no caller waited for, not reported yet
	dropped  int                 // failures beyond maxErrs, counted only
}

// A failure is a failed removal of the garbage entry name of a root.
type failure struct {
	name string
	err  error
}

func (rm *removals) init() { rm.inflight = map[string]*removal{} }

func (rm *removals) hasErr() bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return len(rm.errs) > 0
}

// pending returns the removals in flight.
func (rm *removals) pending() []*removal {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make([]*removal, 0, len(rm.inflight))
	for _, r := range rm.inflight {
		out = append(out, r)
	}
	return out
}

// takeErr returns and forgets the failures not reported yet whose garbage
// entry r still holds: a failure whose entry is gone is moot, and an
// entry missing from r is another root's (a root deleted, and r made
// since with its inode number). A nil r keeps them all.
func (rm *removals) takeErr(r *os.Root) error {
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

// finish records the result of a removal and forgets it as in flight.
func (rm *removals) finish(r *removal, err error) {
	rm.mu.Lock()
	delete(rm.inflight, r.name)
	r.err, r.finished = err, true
	if err != nil && r.waiters == 0 { // no caller to tell
		if len(rm.errs) < maxErrs {
			rm.errs = append(rm.errs, failure{r.name, err})
		} else {
			rm.dropped++
		}
	}
	rm.mu.Unlock()
	close(r.done)
}

// A garbage entry is an entry of Root set aside for removal: renamed to
// name (a fresh aside name) from was, under Root's lock.
type garbage struct{ name, was string }

// removeGarbage starts the removal of the garbage entries of h's root,
// which the caller set aside under the root's lock and still holds: it
// registers them as in flight before the caller lets the lock go, so that
// no other call of this process removes them too. The removal runs on
// the process's removal goroutines (see maxRemovers), with a handle of
// the root of its own, so the caller may release h at once. Unless
// deferred, the caller is counted as their waiter, and must then wait for
// them with wait.
func (l Layout[ID]) removeGarbage(st *rootState, h *openRoot, entries []garbage, deferred bool) ([]*removal, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, fmt.Errorf("dirlife: remove garbage in %s: %w", l.Root, err)
	}
	r, err := h.r.OpenRoot(".")
	if err != nil {
		return nil, fmt.Errorf("dirlife: remove garbage in %s: %w", l.Root, err)
	}
	b := &removeBatch{root: l.Root, r: r, dev: dev, devOf: l.devOf(), hook: l.removing, fault: l.faults, st: st}
	b.left.Store(int64(len(entries)))
	st.retain() // the caller holds a reference: st is still registered
	batch := make([]*removal, len(entries))
	jobs := make([]removeJob, len(entries))
	rm := &st.rm
	rm.mu.Lock()
	for i, g := range entries {
		batch[i] = &removal{name: g.name, was: g.was, done: make(chan struct{})}
		if !deferred {
			batch[i].waiters = 1
		}
		rm.inflight[g.name] = batch[i]
		jobs[i] = removeJob{batch[i], b}
	}
	rm.mu.Unlock()
	startRemovals(jobs)
	return batch, nil
}

// deadline returns the removal deadline in force.
func (l Layout[ID]) deadline() time.Duration {
	if l.RemovalDeadline > 0 {
		return l.RemovalDeadline
	}
	return DefaultRemovalDeadline
}

// How a call waits.
type collect int

const (
	collectNone collect = iota // not counted as a waiter: the failures go to the root's report, or to the calls counted
	collectOwn                 // counted as a waiter of each removal (see removal): the failures are its own
)

// wait waits until the removals in batch are over, the removal deadline
// passes or ctx ends. Under collectOwn, the caller is counted as a waiter
// of each removal in batch (removeGarbage and setAside count it), and
// wait returns the failures of those that ended while it waited, and
// stops counting it; under collectNone it returns none. Those still
// running past the deadline are named by a *StalledError; when ctx ends
// first, ctx's error is returned. Either way they go on, and a failure of
// theirs goes to the calls still waiting for them, or, when none is, to
// the root's report, for a later Prune or Settle.
func (l Layout[ID]) wait(ctx context.Context, st *rootState, batch []*removal, c collect) error {
	if len(batch) == 0 {
		return nil
	}
	timer := time.NewTimer(l.deadline())
	defer timer.Stop()
	var stop error
wait:
	for _, r := range batch {
		select {
		case <-r.done:
		case <-timer.C:
			stop = errStalled
			break wait
		case <-ctx.Done():
			stop = ctx.Err()
			break wait
		}
	}
	rm := &st.rm
	rm.mu.Lock()
	var errs []error
	var left []StalledEntry
	for _, r := range batch {
		switch {
		case !r.finished:
			if c == collectOwn {
				r.waiters--
			}
			left = append(left, StalledEntry{Name: r.was, Aside: r.name})
		case r.err != nil && c == collectOwn:
			errs = append(errs, r.err)
		}
	}
	rm.mu.Unlock()
	switch {
	case len(left) == 0:
	case stop == errStalled:
		errs = append(errs, &StalledError{Root: l.Root, Deadline: l.deadline(), Entries: left})
	default:
		errs = append(errs, stop)
	}
	return errors.Join(errs...)
}

// errStalled marks a wait stopped by the removal deadline.
var errStalled = errors.New("stalled")

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

// Settle waits until the removals that this process's calls on Root left
// running are over (those of [Layout.DeferRemoval], and those a call
// stopped waiting for at its deadline), or until ctx is done, returning
// ctx's error; the removals go on. It returns their failures not reported
// yet while what they left is still in Root, and a [*StalledError] naming
// those still running past the removal deadline. Afterwards every entry
// this process set aside before Settle began is gone, named by the error,
// or left by a failure returned already (by an earlier report, or to a
// call that waited for it); the next Prune removes it, unless its cause
// (a mount) stays. Another process's removals and leftovers are not
// waited for. A missing Root is not an error.
func (l Layout[ID]) Settle(ctx context.Context) error {
	// The failures of at most 16 roots that no call uses any more are
	// kept, the oldest forgotten first; what their removals left is
	// removed all the same by the next Prune.
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
	err = l.wait(ctx, st, st.rm.pending(), collectNone)
	return errors.Join(err, st.rm.takeErr(r))
}
