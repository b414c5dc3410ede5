package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// Config configures a Run. The zero value of each field but Dir means its
// default.
type Config struct {
	// Dir is the platform directory the publisher owns: empty, or one
	// it owned before. Boot empties it.
	Dir string

	// Duration bounds how long generations are published; 0 means no
	// bound (then Generations must be set).
	Duration time.Duration

	// Generations stops the run after this many publishes; 0 means
	// until Duration.
	Generations int

	// Seed makes the stream of generations and the renders' choices of
	// instance and hold reproducible; timing still varies.
	Seed uint64

	// Renders is the number of concurrent render workers; 0 means 4.
	Renders int

	// PublishEvery is the pause between publishes; 0 means 100ms.
	PublishEvery time.Duration

	// Grace is how long a superseded directory may stay on disk after
	// its last lease is released before the Checker calls it late; 0
	// means 5s: far beyond a prompt reclaim (milliseconds), so that a
	// loaded machine's scheduling delays are not taken for a late one.
	Grace time.Duration

	// NoSync turns the layout's durability off.
	NoSync bool

	// Progress, when set, receives a status line: redrawn in place when
	// Terminal is true, a plain line every ProgressEvery (0: 1s) when it
	// is not. Width, when set, returns the terminal's width in columns
	// (0: unknown), and the redrawn line is cut to fit it.
	Progress      io.Writer
	Terminal      bool
	Width         func() int
	ProgressEvery time.Duration

	// Booted, when set, is called once the publisher has booted on Dir,
	// before anything is published: a Run that refuses Dir returns its
	// error without calling it.
	Booted func()

	// Logger receives the publisher's log; nil means none.
	Logger *slog.Logger

	// Evaluator builds and renders; nil means kernel.New(), in-process.
	Evaluator platform.Evaluator

	// afterLease is passed to the pool: see Pool.afterLease.
	afterLease func(platform.Generated)
}

func (c Config) withDefaults() Config {
	if c.Renders <= 0 {
		c.Renders = 4
	}
	if c.PublishEvery <= 0 {
		c.PublishEvery = 100 * time.Millisecond
	}
	if c.Grace <= 0 {
		c.Grace = 5 * time.Second
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = time.Second
	}
	return c
}

// wantOutcome is the outcome each step kind must have.
var wantOutcome = map[StepKind]publish.Outcome{
	StepNew:     publish.Published,
	StepRepeat:  publish.Unchanged,
	StepRelabel: publish.Changed,
	StepBroken:  publish.BuildFailed,
	StepStale:   publish.Stale,
}

// Run boots a publisher on cfg.Dir, runs its reclaim loop, publishes the
// generation stream of cfg.Seed while a pool of renders leases and renders
// the embedded instances, checks every lease and the directory throughout,
// and returns what happened. An error means the run could not start (the
// directory was refused, say); a run that found violations returns them in
// the Summary. Cancelling ctx ends the run early, skipping the final
// reclaim check.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg = cfg.withDefaults()
	if cfg.Duration <= 0 && cfg.Generations <= 0 {
		return nil, errors.New("demo: a run needs a duration or a number of generations")
	}
	rec := newRecorder()
	k := cfg.Evaluator
	if k == nil {
		k = kernel.New()
	}
	pub := platform.NewPublisher(cfg.Dir, platform.PublisherOptions{
		Evaluator: k, Logger: cfg.Logger, NoSync: cfg.NoSync,
		OnPublish: rec.publish, OnReclaim: rec.reclaim,
	})
	if err := pub.Boot(); err != nil {
		return nil, err
	}
	if cfg.Booted != nil {
		cfg.Booted()
	}
	check := NewChecker(pub.Layout(), pub.Store(), cfg.Grace)
	pool := NewPool(pub.Store(), k, check, cfg.Renders, cfg.Seed, 4*cfg.PublishEvery)
	pool.afterLease = cfg.afterLease
	pool.render = func(ctx context.Context, g platform.Generated, inst kernel.Instance) (kernel.RenderOutput, error) {
		out, _, err := pub.RenderLeased(ctx, g, inst) // through the Publisher's render memo
		return out, err
	}

	// The reclaim loop, the sweeps and the status line outlive ctx, so
	// an interrupted run still shuts down in order.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	runErr := make(chan error, 1)
	bgWG.Go(func() { runErr <- pub.Run(bg) })
	var sweepErr error
	bgWG.Go(func() { sweepErr = sweep(bg, check) })

	start := time.Now()
	progress, stopProgress := context.WithCancel(bg)
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		line := NewStatusLine(cfg.Progress, cfg.Terminal, cfg.ProgressEvery).FitTo(cfg.Width)
		progressWG.Go(func() { line.Run(progress, func() string { return status(pub, pool, check, rec, start) }) })
	}

	stop := make(chan struct{})
	var poolWG sync.WaitGroup
	poolWG.Go(func() { pool.Run(ctx, stop) })

	sum := &Summary{Seed: cfg.Seed, Concurrency: cfg.Renders, PlatformDir: cfg.Dir, Invalidation: Invalidation{Instances: len(Instances())}}
	publishStream(ctx, cfg, pub, check, rec, sum)

	close(stop)
	poolWG.Wait()
	sum.ElapsedMS = ms(time.Since(start))
	sum.Interrupted = ctx.Err() != nil
	if !sum.Interrupted {
		finalCheck(check, pub, cfg.Grace)
	}
	stopProgress()
	progressWG.Wait()
	stopBG()
	bgWG.Wait()
	if err := <-runErr; err != nil {
		sum.unexpected("reclaim loop: " + err.Error())
	}
	if sweepErr != nil {
		sum.unexpected("listing the platform directory: " + sweepErr.Error())
	}
	summarise(sum, pub, pool, check, rec)
	return sum, nil
}

// publishStream publishes the stream's steps until the run's end and
// checks each outcome.
func publishStream(ctx context.Context, cfg Config, pub *platform.Publisher, check *Checker, rec *recorder, sum *Summary) {
	stream := NewStream(cfg.Seed)
	deadline := time.Now().Add(cfg.Duration)
	for n := 0; cfg.Generations <= 0 || n < cfg.Generations; n++ {
		if n > 0 && cfg.Duration > 0 && !time.Now().Before(deadline) {
			return
		}
		st := stream.Next()
		check.Expect(st.Generation, st.Files)
		before := renderKeys(ctx, pub)
		g, err := pub.Publish(ctx, st.Generation, st.Files, st.Skew)
		check.Settled(pub.Store().Generation(), time.Now())
		if ctx.Err() != nil {
			return
		}
		msg, outcome := verifyPublish(st, g, err, pub, rec, sum)
		if msg != "" {
			sum.unexpected(msg)
		}
		rec.invalidated(sum.Invalidation.record(st, outcome, before, renderKeys(ctx, pub)))
		t := time.NewTimer(cfg.PublishEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// verifyPublish checks one publish against its step's expectation; it
// returns what was unexpected, or "", and the publish's outcome as its
// event reported it.
func verifyPublish(st Step, g platform.Generated, err error, pub *platform.Publisher, rec *recorder, sum *Summary) (string, publish.Outcome) {
	want := wantOutcome[st.Kind]
	ev, ok := rec.take()
	msg := checkPublish(st, g, err, pub, sum, want, ev, ok)
	return msg, ev.Outcome
}

// checkPublish is verifyPublish, given the publish's event ev (ok false:
// none was reported).
func checkPublish(st Step, g platform.Generated, err error, pub *platform.Publisher, sum *Summary, want publish.Outcome, ev platform.PublishEvent, ok bool) string {
	what := fmt.Sprintf("generation %d (%s)", st.Generation, st.Change)
	switch {
	case !ok:
		return what + ": the publisher reported no publish event"
	case ev.Key != st.Generation:
		return fmt.Sprintf("%s: the publish event names generation %d", what, ev.Key)
	case ev.Outcome != want:
		return fmt.Sprintf("%s: outcome %s, want %s (error: %v)", what, ev.Outcome, want, err)
	}
	switch st.Kind {
	case StepBroken:
		var kerr *kernel.Error
		if !errors.As(err, &kerr) {
			return fmt.Sprintf("%s: a failed build returned %v, not a *kernel.Error", what, err)
		}
		first := kerr.Error()
		if len(kerr.Problems) > 0 {
			first = kerr.Problems[0].String()
		}
		// One line, positions relative to the platform directory.
		first, _, _ = strings.Cut(first, "\n")
		first = strings.ReplaceAll(first, pub.Layout().Root+string(filepath.Separator), "")
		if len(sum.ExpectedFailures) < maxListed {
			sum.ExpectedFailures = append(sum.ExpectedFailures, ExpectedFailure{Generation: st.Generation, Breakage: st.Breakage, Error: first})
		}
	case StepStale:
		var stale *publish.StaleError[int64]
		if !errors.Is(err, publish.ErrStale) || !errors.As(err, &stale) || stale.Key != st.Generation {
			return fmt.Sprintf("%s: a stale publish returned %v, not a *publish.StaleError[int64] for it", what, err)
		}
	default:
		if err != nil {
			return fmt.Sprintf("%s: %v", what, err)
		}
		if g.Generation != st.Generation || g.Skew != st.Skew {
			return fmt.Sprintf("%s: returned generation %d with skew %v, want %d with %v", what, g.Generation, g.Skew, st.Generation, st.Skew)
		}
	}
	if cur := pub.Store().Generation(); st.Kind != StepBroken && st.Kind != StepStale && cur != st.Generation {
		return fmt.Sprintf("%s: the store holds generation %d after it", what, cur)
	}
	return ""
}

// sweepEvery is how often the Checker lists the platform directory.
const sweepEvery = 20 * time.Millisecond

// sweep runs the Checker's sweeps until ctx ends.
func sweep(ctx context.Context, check *Checker) error {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if _, err := check.Sweep(now); err != nil {
				return err
			}
		}
	}
}

// finalCheck waits, up to grace, for every superseded directory to be
// reclaimed once the renders are done, then reports any still on disk.
func finalCheck(check *Checker, pub *platform.Publisher, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		on, err := pub.Layout().Generations()
		if err == nil && len(on) <= 1 && (len(on) == 0 || on[0] == pub.Store().Generation()) {
			break
		}
		time.Sleep(sweepEvery)
	}
	// Every lease is released and the grace is over: anything left is
	// late.
	check.Sweep(time.Now().Add(grace + time.Millisecond))
}

// status returns the progress line.
func status(pub *platform.Publisher, pool *Pool, check *Checker, rec *recorder, start time.Time) string {
	st := pub.Stats()
	n, _ := check.Violations()
	done := pool.Done()
	rate := float64(done) / time.Since(start).Seconds()
	gen := "none"
	if st.Held {
		gen = fmt.Sprint(st.Current.Key)
	}
	var onDisk []int64
	for _, d := range st.Dirs { // by generation
		if len(onDisk) == 0 || onDisk[len(onDisk)-1] != d.Identity.Key {
			onDisk = append(onDisk, d.Identity.Key)
		}
	}
	last := ""
	if pi, ok := rec.lastInvalidation(); ok {
		last = fmt.Sprintf("  invalidated %d/%d", pi.Invalidated, pi.Invalidated+pi.Valid)
	}
	return fmt.Sprintf("generation %s  on disk %s  leased %s  leases %d  renders %d (%.0f/s)  violations %d%s",
		gen, shortList(onDisk), shortList(pub.Store().Leased()), pool.Outstanding(), done, rate, n, last)
}

// shortList formats a few generations in full and many as a count, so the
// status line stays on one line of a terminal.
func shortList(gens []int64) string {
	if len(gens) > 4 {
		return fmt.Sprintf("%d generations", len(gens))
	}
	return fmt.Sprint(gens)
}

// summarise fills in sum from what the run's parts collected.
func summarise(sum *Summary, pub *platform.Publisher, pool *Pool, check *Checker, rec *recorder) {
	counts, latency, failures := pool.Results()
	sum.RenderCounts, sum.RenderFailures = counts, failures
	sum.Renders = counts.Total
	sum.RenderLatency = quantiles(&latency)
	if sum.ElapsedMS > 0 {
		sum.RendersPerSec = float64(counts.Total) / (sum.ElapsedMS / 1000)
	}
	sum.MaxOutstandingLeases = pool.MaxOutstanding()
	sum.MaxIdleOnDisk = check.MaxIdle()
	sum.Outlived = check.Outlived()
	sum.Violations, sum.ViolationDetails = check.Violations()

	rec.mu.Lock()
	o := rec.outcomes
	sum.Publishes.Published = o[publish.Published]
	sum.Publishes.Unchanged = o[publish.Unchanged]
	sum.Publishes.Changed = o[publish.Changed]
	sum.Publishes.BuildFailed = o[publish.BuildFailed]
	sum.Publishes.Stale = o[publish.Stale]
	sum.Publishes.Failed = o[publish.Failed]
	sum.Publishes.Cancelled = rec.cancelled
	// The publish the run's end interrupted is counted: Total is the sum
	// of the outcomes.
	sum.Publishes.Total = sum.Publishes.Published + sum.Publishes.Unchanged + sum.Publishes.Changed +
		sum.Publishes.BuildFailed + sum.Publishes.Stale + sum.Publishes.Failed + sum.Publishes.Cancelled
	sum.PublishLatency = PublishLatency{Write: quantiles(&rec.write), Build: quantiles(&rec.build), Set: quantiles(&rec.set), Prune: quantiles(&rec.prune)}
	sum.Reclaimed, sum.ReclaimErrors = rec.reclaims, rec.reclaimErrors
	sum.ReclaimDelay = quantiles(&rec.reclaimDelay)
	rec.mu.Unlock()

	st := pub.Stats()
	sum.Prunes = st.Reclaims
	sum.RenderMemo = RenderMemo{Hits: st.Memo.Hits, Misses: st.Memo.Misses, Evictions: st.Memo.Evictions,
		Entries: st.Memo.Entries, Bytes: st.Memo.Bytes, AdmissionWaits: st.Admission.Waits}
	if n := st.Memo.Hits + st.Memo.Misses; n > 0 {
		sum.RenderMemo.HitRate = float64(st.Memo.Hits) / float64(n)
	}
	// Lists are empty, not null, in JSON.
	for _, l := range []*[]string{&sum.Unexpected, &sum.RenderFailures} {
		if *l == nil {
			*l = []string{}
		}
	}
	if sum.Invalidation.PerPublish == nil {
		sum.Invalidation.PerPublish = []PublishInvalidation{}
	}
	if sum.ExpectedFailures == nil {
		sum.ExpectedFailures = []ExpectedFailure{}
	}
	if sum.ViolationDetails == nil {
		sum.ViolationDetails = []Violation{}
	}
}
