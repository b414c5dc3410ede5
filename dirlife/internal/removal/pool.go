// Package removal removes the garbage of a dirlife root: the entries a
// layout set aside under names of their own, under the root's lock, are
// removed after the lock is let go, on a pool of at most [MaxRemovers]
// goroutines per process, with bounded descriptors, never into another
// filesystem ([MountError]). A call waits for its removals up to a
// deadline ([Removals.Wait]); past it, a [*StalledError] names what is
// left, and the removals go on, their failures kept for whoever waits
// next or for the root's next report.
package removal

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

// StepRemoveTree is the removal of a garbage entry on the pool, as the fault
// seam names it, with the entry's name in Root (its aside name): a failure
// the seam returns is the removal's, and leaves the entry whole.
const StepRemoveTree = "remove-tree"

// MaxRemovers bounds the goroutines that remove garbage in this process,
// for every root and call together: the workers that take removals in
// turn and the helpers that the top of a tree takes for its entries (see
// removeEach). A stuck removal holds its goroutine, and so its slot;
// the others go on with the rest, and once every slot is held a removal
// waits for one.
const MaxRemovers = 4

// removers is this process's pool of removal goroutines.
var removers struct {
	mu      sync.Mutex
	running int   // goroutines removing, at most MaxRemovers
	queue   []job // removals waiting for a goroutine, oldest first; empty while running < MaxRemovers
	peak    int   // the most goroutines running at once, for tests
}

// Load returns how many goroutines of the pool are removing, how many
// removals wait for one, and the most that ever ran at once: for tests.
func Load() (running, queued, peak int) {
	removers.mu.Lock()
	defer removers.mu.Unlock()
	return removers.running, len(removers.queue), removers.peak
}

// A job is one removal and the batch it belongs to.
type job struct {
	rm *Removal
	b  *batch
}

// A batch is the removals one call started on one root.
type batch struct {
	Batch
	rms  *Removals
	left atomic.Int64 // removals not over
}

// run removes j's entry and records the result.
func (j job) run() {
	b := j.b
	if b.Hook != nil {
		b.Hook(j.rm.was)
	}
	var err error
	if b.Fault != nil {
		err = b.Fault(StepRemoveTree, j.rm.name)
	}
	if err == nil {
		err = removeTree(b.R, j.rm.name, j.rm.name, b.Dev, b.DevOf)
	}
	if err != nil {
		err = Err(b.Root, j.rm.name, err)
	}
	last := b.left.Add(-1) == 0
	b.rms.finish(j.rm, err)
	if last {
		// No removal uses R or the batch any more. Both are let go before
		// a waiter wakes, so that a call that waited returns holding no
		// descriptor of the root and no reference the batch took.
		b.R.Close()
		if b.Done != nil {
			b.Done()
		}
	}
	close(j.rm.done)
}

// startRemovals hands jobs to the pool: each gets a goroutine of its own
// while the pool has slots free, and the rest wait, in order, for a
// goroutine that is done with its own.
func startRemovals(jobs []job) {
	removers.mu.Lock()
	n := min(len(jobs), MaxRemovers-removers.running)
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
func removeLoop(j job) {
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
func nextRemoval() (job, bool) {
	removers.mu.Lock()
	defer removers.mu.Unlock()
	if len(removers.queue) == 0 {
		removers.running--
		return job{}, false
	}
	j := removers.queue[0]
	removers.queue[0] = job{}
	removers.queue = removers.queue[1:]
	return j, true
}

// takeHelper takes a slot of the pool for a helper goroutine, if one is
// free and no removal waits for it.
func takeHelper() bool {
	removers.mu.Lock()
	defer removers.mu.Unlock()
	if removers.running == MaxRemovers || len(removers.queue) > 0 {
		return false
	}
	removers.running++
	removers.peak = max(removers.peak, removers.running)
	return true
}

// maxErrs bounds the failures a root keeps for its next report.
const maxErrs = 16

// A Removal is the removal of one garbage entry of a root, set aside under
// a name of its own: at most one is in flight per entry in this process,
// and it goes on, on its goroutine, whoever stops waiting for it. Each
// call that waits for it, the one that started it and those that found
// it under way, is counted in waiters until it stops waiting; its failure
// goes to every call counted when it ends, and to the root's report when
// none is.
type Removal struct {
	name string        // its aside name in Root, where it is removed
	was  string        // its name when it was set aside: an ID's directory, a staging directory, …
	done chan struct{} // closed when the attempt returns

	// Guarded by the removals' mu.
	err      error
	finished bool
	waiters  int // calls waiting for it
}

// Done returns a channel that is closed when the removal's attempt
// returns.
func (r *Removal) Done() <-chan struct{} { return r.done }

// Removals are this process's removals of one root's garbage. The zero
// value has none.
type Removals struct {
	mu       sync.Mutex
	inflight map[string]*Removal // by aside name
	errs     []failure           // failures that no caller waited for, not reported yet
	dropped  int                 // failures beyond maxErrs, counted only
}

// A failure is a failed removal of the garbage entry name of a root.
type failure struct {
	name string
	err  error
}

// HasErr reports whether a failure waits for a report.
func (rm *Removals) HasErr() bool {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return len(rm.errs) > 0
}

// Pending returns the removals in flight.
func (rm *Removals) Pending() []*Removal {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := make([]*Removal, 0, len(rm.inflight))
	for _, r := range rm.inflight {
		out = append(out, r)
	}
	return out
}

// TakeErr returns and forgets the failures not reported yet whose garbage
// entry r still holds: a failure whose entry is gone is moot, and an
// entry missing from r is another root's (a root deleted, and r made
// since with its inode number). A nil r keeps them all.
func (rm *Removals) TakeErr(r *os.Root) error {
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

// finish records the result of a removal and forgets it as in flight; the
// caller then closes r.done, waking its waiters.
func (rm *Removals) finish(r *Removal, err error) {
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
}

// A Garbage entry is an entry of a root set aside for removal: renamed to
// Name (a fresh aside name) from Was, under the root's lock.
type Garbage struct{ Name, Was string }

// A Batch is what the removals one call starts on one root share.
type Batch struct {
	Root  string   // the root as given, for errors
	R     *os.Root // a handle of the root of the batch's own; closed by the last removal
	Dev   uint64   // the root's device: removal enters no other
	DevOf func(fs.FileInfo) uint64
	Hook  func(was string)              // test seam: called before each entry is removed; nil in production
	Fault func(step, name string) error // test seam: StepRemoveTree; nil in production
	Done  func()                        // called once the last removal is over, if not nil
}

// Start starts the removal of entries, which the caller set aside under
// the root's lock and still holds: it registers them as in flight before
// the caller lets the lock go, so that no other call of this process
// removes them too. The removals run on the process's pool (see
// MaxRemovers), with b.R, so the caller may let its own handles go at
// once. Unless deferred, the caller is counted as their waiter, and must
// then wait for them with Wait.
func (rm *Removals) Start(b Batch, entries []Garbage, deferred bool) []*Removal {
	if len(entries) == 0 {
		return nil
	}
	bt := &batch{Batch: b, rms: rm}
	bt.left.Store(int64(len(entries)))
	out := make([]*Removal, len(entries))
	jobs := make([]job, len(entries))
	rm.mu.Lock()
	if rm.inflight == nil {
		rm.inflight = map[string]*Removal{}
	}
	for i, g := range entries {
		out[i] = &Removal{name: g.Name, was: g.Was, done: make(chan struct{})}
		if !deferred {
			out[i].waiters = 1
		}
		rm.inflight[g.Name] = out[i]
		jobs[i] = job{out[i], bt}
	}
	rm.mu.Unlock()
	startRemovals(jobs)
	return out
}

// InFlight reports whether the removal of the entry name is in flight,
// and returns it; with join, the caller is counted as its waiter before it
// can end (its failure is the caller's too), and must then wait for it
// with Wait.
func (rm *Removals) InFlight(name string, join bool) (*Removal, bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	r := rm.inflight[name]
	if r != nil && join {
		r.waiters++
	}
	return r, r != nil
}

// How a call waits.
type Collect int

const (
	CollectNone Collect = iota // not counted as a waiter: the failures go to the root's report, or to the calls counted
	CollectOwn                 // counted as a waiter of each removal (see Removal): the failures are its own
)

// Wait waits until the removals in batch are over, deadline passes or
// ctx ends. Under CollectOwn, the caller is counted as a waiter of each
// removal in batch (Start and InFlight count it), and Wait returns the
// failures of those that ended while it waited, and stops counting it;
// under CollectNone it returns none. Those still
// running past the deadline are named by a *StalledError; when ctx ends
// first, ctx's error is returned. Either way they go on, and a failure of
// theirs goes to the calls still waiting for them, or, when none is, to
// the root's report, for a later Prune or Settle.
func (rm *Removals) Wait(ctx context.Context, batch []*Removal, c Collect, root string, deadline time.Duration) error {
	if len(batch) == 0 {
		return nil
	}
	timer := time.NewTimer(deadline)
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
	rm.mu.Lock()
	var errs []error
	var left []StalledEntry
	for _, r := range batch {
		switch {
		case !r.finished:
			if c == CollectOwn {
				r.waiters--
			}
			left = append(left, StalledEntry{Name: r.was, Aside: r.name})
		case r.err != nil && c == CollectOwn:
			errs = append(errs, r.err)
		}
	}
	rm.mu.Unlock()
	switch {
	case len(left) == 0:
	case stop == errStalled:
		errs = append(errs, &StalledError{Root: root, Deadline: deadline, Entries: left})
	default:
		errs = append(errs, stop)
	}
	return errors.Join(errs...)
}

// errStalled marks a wait stopped by the removal deadline.
var errStalled = errors.New("stalled")

// Err wraps a failed removal of the garbage entry name of root.
func Err(root, name string, err error) error {
	var me *MountError
	if errors.As(err, &me) {
		if me.Root == "" {
			me.Root = root
		}
		return me
	}
	return fmt.Errorf("dirlife: remove %s: %w", filepath.Join(root, name), err)
}
