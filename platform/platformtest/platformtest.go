package platformtest

import (
	"context"
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
// listed in the package documentation. A failure is shrunk to a short
// sequence, which Check logs once, in words; messages call the root given
// to newTarget "Root". The number of sequences, their length and the time
// spent shrinking are rapid's (-rapid.checks, -rapid.steps,
// -rapid.shrinktime); shrinking also ends after the number of runs set
// by [ShrinkRuns], so that on any machine it gets as far.
//
// Check blocks until every sequence has run. It waits for the target only
// within the bound set by [ReclaimWait]: a Reconcile or Delete that has not
// returned that long after Check released every lease fails t, as does a
// Root that still holds more than the current directory.
func Check(t *testing.T, newTarget func(root string) (Target, error), opts ...Option) {
	t.Helper()
	check(t, t.TempDir(), newTarget, opts...)
}

// check is Check on any rapid.TB, with the sequences' roots under base.
func check(t rapid.TB, base string, newTarget func(root string) (Target, error), opts ...Option) {
	t.Helper()
	cfg := defaults
	for _, o := range opts {
		o(&cfg)
	}
	// Check reports one failing sequence: the minimal one rapid shrank
	// to, run once more to show it (or, when that run passed, the
	// shortest of all that failed), or, when every sequence passed its
	// checks at step boundaries, the shortest in which a render running
	// during a Reconcile or Delete saw a property broken. The deferred
	// call runs also when FailNow ends the goroutine.
	rep := &report{}
	defer func() {
		v := rep.pick()
		switch {
		case v == nil || !t.Failed():
		case v == rep.last && v.detail == "":
			// Its message is the last thing the rerun logged.
			t.Logf("the failing sequence (%d steps): %s", v.steps, v.seq)
		default:
			t.Logf("%s\nthe failing sequence (%d steps): %s", v.text(), v.steps, v.seq)
		}
	}()
	// Once a sequence has failed, every run is rapid reproducing or
	// shrinking it. Past cfg.shrinkRuns of them each further candidate
	// is turned away at once, so shrinking ends after a number of runs,
	// not a time; the run that shows the result comes after t has
	// failed and is never turned away.
	failing, reruns := false, 0
	rapid.Check(t, func(rt *rapid.T) {
		if failing && !t.Failed() {
			if reruns >= cfg.shrinkRuns {
				rt.SkipNow()
			}
			reruns++
		}
		defer func() {
			if rt.Failed() {
				failing = true
			}
		}()
		rep.begin()
		m := newMachine(rt, cfg, base, newTarget, rep)
		m.guard(func(*rapid.T) { m.start() }, true)(rt)
		rt.Repeat(m.actions())
		if m.deferred != nil {
			rep.saw(m.deferred)
		}
	})
	if v := rep.seen; v != nil {
		t.Fatalf("%s\n(seen by a render running during a Reconcile or Delete, which the scheduler decides: a rerun may not see it, so this is the shortest sequence in which it was seen)\nthe failing sequence (%d steps): %s", v.text(), v.steps, v.seq)
	}
}

// An Option changes what [Check] waits for or adds a stricter property.
type Option func(*config)

type config struct {
	reclaimWait  time.Duration
	releaseAfter time.Duration
	succeed      bool
	noop         bool
	keepServing  bool
	neverRefused bool
	shrinkRuns   int
}

var defaults = config{reclaimWait: 10 * time.Second, releaseAfter: 500 * time.Millisecond, shrinkRuns: 5000}

// ShrinkRuns bounds how many times Check runs sequences while it shrinks a
// failure: once that many have run, the shortest failing sequence found so
// far is the one reported. A bound on runs, unlike -rapid.shrinktime,
// shrinks a failure as far on a slow machine as on a fast one. The
// default is 5000. An n that is not positive keeps the default.
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
// Check has released every lease. The default, 10 seconds, detects a hang;
// it is not a performance assertion. A d that is not positive keeps the
// default.
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
