package platformtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/platformmodule"
	"pgregory.net/rapid"
)

// A Target keeps a platform store and its directories the way an
// operator's reconciler does.
type Target interface {
	// Reconcile brings the target to serve generation with files, as one
	// reconcile of the Platform resource at that generation would. It
	// returns nil only once the store serves generation with files, or a
	// newer generation: a Reconcile that has not served its generation
	// must return an error, and a requeue is not a success. It may fail
	// (a controller retries), and it may return nil for a module that
	// does not build (a terminal failure recorded in status); it must
	// never break a property.
	Reconcile(ctx context.Context, generation int64, files platformmodule.Files) error
	// Delete is the Platform resource's deletion. It returns nil only
	// once the store holds nothing.
	Delete(ctx context.Context) error
	// Store is the store renders lease from.
	Store() *platform.Store
}

// Check drives targets made by newTarget through random sequences and
// fails t when a property breaks. newTarget is given an empty root the
// first time; given the same root again, it is the process restarting
// (every lease of the old process is gone). A Target that is an io.Closer
// is closed before newTarget is called again on its root, and when Check
// ends.
//
// Check calls Reconcile and Delete from one goroutine, one at a time, and
// leases from other goroutines, also while a Reconcile runs; the properties
// it checks after every step, and the options that add stricter ones, are
// listed in the package documentation. The first sequence that breaks a
// property is shrunk by whole steps to a short one, which Check runs once
// more to show it and reports once, in words, with the property it
// breaks and rapid's seed of the sequence first found; messages call the
// root given to newTarget "Root". The number of sequences and their
// length are rapid's (-rapid.checks, -rapid.steps); shrinking ends once no
// shorter sequence fails, or after the number of runs set by
// [ShrinkRuns], so that on any machine it gets as far.
//
// Check blocks until every sequence has run. It waits for the target only
// within the bound set by [ReclaimWait] (by default, until shortly before
// the test's deadline): a Reconcile or Delete that has not returned by then
// after Check released every lease fails t, as does a Root that still
// holds more than the current directory.
func Check(t *testing.T, newTarget func(root string) (Target, error), opts ...Option) {
	t.Helper()
	if d, ok := t.Deadline(); ok {
		// Past the test's deadline go test ends the process: a target that
		// has not returned by shortly before it has hung, whatever the
		// machine's speed. The rest is left to report and shrink.
		passed := make(chan struct{})
		left := time.Until(d)
		timer := time.AfterFunc(left-left/10, func() { close(passed) })
		t.Cleanup(func() { timer.Stop() })
		opts = append([]Option{func(c *config) { c.deadline = passed }}, opts...)
	}
	check(t, t.TempDir(), newTarget, opts...)
}

// check is Check on any rapid.TB, with the sequences' roots under base.
func check(t rapid.TB, base string, newTarget func(root string) (Target, error), opts ...Option) {
	t.Helper()
	cfg := defaults
	for _, o := range opts {
		o(&cfg)
	}
	// rapid draws the sequences; Check shrinks the first that breaks a
	// property by whole steps (see shrinker), and reports the result
	// once, run again to show it. rapid reports to tb, which keeps
	// rapid's report of a failure for Check to replace.
	//
	// rapid's own shrinker, which works on the bits the choices were
	// drawn from, is not used for a broken property: it spends thousands
	// of runs where Check's takes tens, and its passes over a long
	// sequence cost minutes even when every candidate is turned away. So
	// the run in which rapid reproduces the failure raises it in other
	// words: rapid takes it for a failure it cannot reproduce, and
	// returns it as found, with its bits kept for -rapid.failfile. A
	// failure that breaks no property (a panic in Check, a Close that
	// fails) is rapid's to shrink, within cfg.shrinkRuns runs.
	tb := &rapidTB{TB: t}
	var (
		failing bool       // a sequence has failed
		first   *violation // how the first failing sequence failed, when it broke a property
		best    *outcome   // the shortest failure that breaks first's property
		seen    *violation // the shortest sequence in which a render running during a Reconcile or Delete saw a property broken
		reruns  int        // sequences rapid has run since the first failure
	)
	prop := func(rt *rapid.T) {
		if tb.Failed() && best != nil {
			rt.SkipNow() // rapid's run to show its result: Check shows its own
		}
		rerun := failing
		if failing {
			if first != nil && reruns >= 1 || reruns >= cfg.shrinkRuns || cfg.past() {
				rt.SkipNow()
			}
			reruns++
		}
		m, err := newMachine(cfg, base, newTarget)
		if err != nil {
			rt.Fatalf("platformtest: %v", err)
		}
		m.reproducing = failing
		rt.Cleanup(func() {
			if err := m.close(); err != nil {
				rt.Errorf("platformtest: closing the target at the end: %v", err)
			}
		})
		defer func() {
			if !rt.Failed() {
				return
			}
			if !failing && m.failure != nil {
				first = m.failure.v
			}
			failing = true
			// A wait the deadline cut in a rerun says nothing of the
			// sequence: the deadline had passed, or nearly, when it ran.
			if f := m.failure; f != nil && first != nil && f.v.kind == first.kind && !(rerun && f.v.cut) && (best == nil || f.smaller(best)) {
				best = f
			}
		}()
		runRapid(rt, m)
		if v := m.deferred; v != nil && (seen == nil || v.steps < seen.steps) {
			seen = v
		}
	}
	func() {
		defer func() {
			if p := recover(); p != nil && p != errFailNow {
				panic(p)
			}
		}()
		rapid.Check(tb, prop)
	}()
	switch {
	case tb.Failed() && best == nil:
		tb.forward()
		t.FailNow()
	case tb.Failed():
		// Past the test's deadline bound no sequence runs again: its
		// waits would be cut at once, and a cut wait shows nothing.
		s := &shrinker{
			run: func(plan []step) outcome {
				if cfg.past() {
					return outcome{}
				}
				o := replay(cfg, base, newTarget, plan)
				if o.v != nil && o.v.cut {
					return outcome{}
				}
				return o
			},
			best:   *best,
			budget: cfg.shrinkRuns - reruns,
		}
		o := s.shrink()
		v, note := o.v, ""
		switch shown := s.run(o.script); {
		case cfg.past():
			note = "\n(not shrunk further, nor run again to show it: the test's deadline is near)"
		case shown.v != nil && shown.v.kind == v.kind:
			v = shown.v
		default:
			note = "\n(it failed so when it ran, but not when it ran once more to show it: what it breaks depends on the scheduler)"
		}
		t.Fatalf("%s\nthe failing sequence (%d steps): %s%s%s", v.text(), v.steps, v.seq, note, tb.reproduce())
	case seen != nil:
		t.Fatalf("%s\n(seen by a render running during a Reconcile or Delete, which the scheduler decides: a rerun may not see it, so this is the shortest sequence in which it was seen)\nthe failing sequence (%d steps): %s", seen.text(), seen.steps, seen.seq)
	}
}

// rapidTB is the TB Check gives rapid. It passes rapid's logs on until
// rapid reports a failure; that report it keeps, for Check to pass on
// (forward) or to replace with its own. Its FailNow panics with
// errFailNow, which check recovers.
type rapidTB struct {
	rapid.TB
	mu     sync.Mutex
	failed bool
	report []string // what rapid logged and reported since it failed
}

var errFailNow = errors.New("platformtest: rapid failed the check")

func (r *rapidTB) Logf(format string, args ...any) { r.Log(fmt.Sprintf(format, args...)) }

func (r *rapidTB) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.failed {
		r.TB.Log(args...)
		return
	}
	r.report = append(r.report, fmt.Sprint(args...))
}

func (r *rapidTB) Errorf(format string, args ...any) { r.Error(fmt.Sprintf(format, args...)) }

func (r *rapidTB) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.report = append(r.report, fmt.Sprint(args...))
}

func (r *rapidTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r *rapidTB) Fatal(args ...any) {
	r.Error(args...)
	r.FailNow()
}

func (r *rapidTB) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *rapidTB) FailNow() {
	r.Fail()
	panic(errFailNow)
}

func (r *rapidTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// forward fails the test with what rapid reported.
func (r *rapidTB) forward() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.TB.Error(strings.Join(r.report, "\n"))
}

// reproduce returns what rapid said runs the failure again (its seed,
// its fail file), on a line of its own, or "" when it said nothing.
func (r *rapidTB) reproduce() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.report {
		for line := range strings.Lines(s) {
			if _, args, ok := strings.Cut(line, "reproduce, specify "); ok {
				return "\nrapid finds it again with " + strings.TrimSpace(args)
			}
		}
	}
	return ""
}

// An Option changes what [Check] waits for or adds a stricter property.
type Option func(*config)

type config struct {
	reclaimWait  time.Duration   // 0: until the deadline bound passes
	deadline     <-chan struct{} // closed once the test's deadline bound has passed; nil: no bound
	releaseAfter time.Duration
	succeed      bool
	noop         bool
	keepServing  bool
	neverRefused bool
	shrinkRuns   int
}

var defaults = config{releaseAfter: 500 * time.Millisecond, shrinkRuns: 5000}

// past reports whether the test's deadline bound has passed: a sequence
// run now would find every wait for the target cut at once.
func (c config) past() bool {
	if c.reclaimWait > 0 {
		return false
	}
	select {
	case <-c.deadline:
		return true
	default:
		return false // also with no bound: a nil channel is never ready
	}
}

// waitBound returns a channel closed once a wait for the target that
// starts now has lasted past its bound (nil, never ready, for a wait with
// no bound), and a func that stops its timer.
func (c config) waitBound() (<-chan struct{}, func()) {
	if c.reclaimWait <= 0 {
		return c.deadline, func() {}
	}
	over := make(chan struct{})
	timer := time.AfterFunc(c.reclaimWait, func() { close(over) })
	return over, func() { timer.Stop() }
}

// waitWords says how long Check waited for the target.
func (c config) waitWords() string {
	if c.reclaimWait > 0 {
		return c.reclaimWait.String()
	}
	return "until shortly before the test's deadline"
}

// ShrinkRuns bounds how many times Check runs sequences while it shrinks a
// failure: once that many have run, the shortest failing sequence found so
// far is the one reported. A bound on runs, unlike a time, shrinks a
// failure as far on a slow machine as on a fast one. A failure usually
// shrinks in tens of runs; the default, 5000, is a bound for a target
// whose failures shrink slowly. An n that is not positive keeps the
// default.
func ShrinkRuns(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.shrinkRuns = n
		}
	}
}

// ReclaimWait bounds how long Check waits for a target that removes
// directories in the background: for Root to hold only the current
// directory (property 4), and for a Reconcile or Delete to return once
// Check has released every lease. By default Check waits until shortly
// before the test's deadline (go test -timeout; with none, for as long as
// it takes), so that only a hang fails, however slow the machine; a
// bound detects a hang sooner, and fails a target slower than it. A d
// that is not positive keeps the default.
func ReclaimWait(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.reclaimWait = d
		}
	}
}

// ReleaseHeldAfter sets how long a Reconcile or Delete may run before Check
// releases every lease it holds across steps, as renders that finish would;
// a target that waits for its readers before it rewrites a directory needs
// them to. The default is 500 milliseconds. A d that is not positive keeps
// the default.
func ReleaseHeldAfter(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.releaseAfter = d
		}
	}
}

// ReconcilesSucceed adds a property: every Reconcile of a module that
// builds, at a generation no older than the one the store holds, returns
// nil.
func ReconcilesSucceed() Option { return func(c *config) { c.succeed = true } }

// IdenticalIsNoop adds a property: a Reconcile of the generation the store
// holds with the files it was last reconciled with returns nil and changes
// nothing: the store holds the same record, and its directory is the same
// directory, not a rewritten copy.
func IdenticalIsNoop() Option { return func(c *config) { c.noop = true } }

// FailureKeepsServing adds a property: a Reconcile that fails leaves the
// store holding the record it held before.
func FailureKeepsServing() Option { return func(c *config) { c.keepServing = true } }

// LeasesNeverRefused adds a property: once a Reconcile has returned nil,
// no lease is refused (Store.Lease reports ok false) until a Delete or a
// restart, also while a Reconcile runs.
func LeasesNeverRefused() Option { return func(c *config) { c.neverRefused = true } }
