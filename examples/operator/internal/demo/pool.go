package demo

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

// RenderCounts are the outcomes of a pool's renders.
type RenderCounts struct {
	Total          int `json:"total"`
	OK             int `json:"ok"`              // rendered, with or without skew warnings
	SkewWarned     int `json:"skew_warned"`     // of OK: rendered with a catalog-skew diagnostic
	SkewRefused    int `json:"skew_refused"`    // refused with a *kernel.SkewError under SkewRefuse
	CatalogRefused int `json:"catalog_refused"` // refused with a *kernel.CatalogError: a catalog missing or disabled
	Failed         int `json:"failed"`          // any other error: unexpected
	Cancelled      int `json:"cancelled"`       // stopped by the run's context

	// NotServed counts renders refused because the store held nothing,
	// after the first record was served: 0, since a changed module is
	// swapped in and nothing in the run forgets the platform.
	NotServed int `json:"not_served"`

	// Inconsistent counts renders whose outcome differed from an earlier
	// render of the same instance against the same platform files.
	Inconsistent int `json:"inconsistent"`
}

// maxFailureDetails bounds the unexpected render failures a pool keeps in
// full; it counts every one.
const maxFailureDetails = 20

// A Pool renders the embedded instances against whatever generation a
// store holds, from many goroutines at once, each render holding its lease
// for a random time, every lease watched by a Checker.
type Pool struct {
	store     *platform.Store
	kernel    platform.Evaluator
	check     *Checker
	instances []Instance
	workers   int
	seed      uint64
	longHold  time.Duration // the hold of a slow reader, spanning several publishes
	// afterLease, when set, is called with every record leased, after
	// the Checker has looked at it: tests plant violations with it.
	afterLease func(platform.Generated)
	// render, when set, renders an instance against the record leased;
	// nil: the kernel's Render.
	render func(context.Context, platform.Generated, kernel.Instance) (kernel.RenderOutput, error)

	outstanding atomic.Int64
	served      atomic.Bool // a record was leased
	maxOut      atomic.Int64
	done        atomic.Int64

	mu       sync.Mutex
	seen     consistency
	counts   RenderCounts
	latency  Histogram
	failures []string
}

// NewPool returns a pool of workers rendering against store's records and
// checked by check. Its random choices are a function of seed; a slow
// reader holds its lease for about longHold.
func NewPool(store *platform.Store, k platform.Evaluator, check *Checker, workers int, seed uint64, longHold time.Duration) *Pool {
	return &Pool{store: store, kernel: k, check: check, instances: Instances(),
		workers: workers, seed: seed, longHold: longHold}
}

// Run renders until stop is closed or ctx ends, then returns once every
// worker has released its lease.
func (p *Pool) Run(ctx context.Context, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for w := range p.workers {
		wg.Go(func() { p.work(ctx, stop, w) })
	}
	wg.Wait()
}

func (p *Pool) work(ctx context.Context, stop <-chan struct{}, w int) {
	rng := rand.New(rand.NewPCG(p.seed, uint64(w)+1))
	first := true
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		g, release, ok := p.store.Lease()
		if !ok {
			// Nothing published yet; once something was, nothing should
			// ever be refused.
			if p.served.Load() {
				p.mu.Lock()
				p.counts.Total++
				p.counts.NotServed++
				p.mu.Unlock()
			}
			pause(ctx, stop, time.Millisecond)
			continue
		}
		p.served.Store(true)
		p.leased()
		h := p.check.Acquire(g)
		if p.afterLease != nil {
			p.afterLease(g)
		}
		inst := p.instances[rng.IntN(len(p.instances))]
		start := time.Now()
		var out kernel.RenderOutput
		var err error
		if p.render != nil {
			out, err = p.render(ctx, g, inst.Kernel())
		} else {
			out, err = p.kernel.Render(ctx, kernel.RenderInput{Platform: g.Platform, Instance: inst.Kernel(), Skew: g.Skew})
		}
		took := time.Since(start)
		hold := p.hold(rng, w == 0 && first)
		first = false
		pause(ctx, stop, hold)
		h.Release(release)
		p.outstanding.Add(-1)
		p.record(g, h.digest, inst, out, err, took)
	}
}

// leased counts a new outstanding lease.
func (p *Pool) leased() {
	n := p.outstanding.Add(1)
	for {
		m := p.maxOut.Load()
		if n <= m || p.maxOut.CompareAndSwap(m, n) {
			return
		}
	}
}

// hold returns how long a render keeps its lease after rendering: mostly
// briefly, sometimes for a while, now and then (and always for the first
// render of the first worker) as a slow reader whose generation is
// superseded under it.
func (p *Pool) hold(rng *rand.Rand, slow bool) time.Duration {
	switch n := rng.IntN(100); {
	case slow || n < 3:
		return p.longHold/2 + randDuration(rng, p.longHold)
	case n < 20:
		return 20*time.Millisecond + randDuration(rng, 100*time.Millisecond)
	default:
		return randDuration(rng, 10*time.Millisecond)
	}
}

// randDuration returns a duration in [0, d), or 0 when d is not positive.
func randDuration(rng *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(d)))
}

// pause waits for d, or until stop is closed or ctx ends.
func pause(ctx context.Context, stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	case <-ctx.Done():
	}
}

// record classifies one render.
func (p *Pool) record(g platform.Generated, files digest, inst Instance, out kernel.RenderOutput, err error, took time.Duration) {
	var skew *kernel.SkewError
	var catalog *kernel.CatalogError
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Total++
	p.done.Add(1)
	switch {
	case err == nil:
		p.counts.OK++
		if len(out.Diagnostics) > 0 {
			p.counts.SkewWarned++
		}
		p.latency.Record(took)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		p.counts.Cancelled++
		return
	case errors.As(err, &skew) && g.Skew == kernel.SkewRefuse:
		p.counts.SkewRefused++
		p.latency.Record(took)
	case errors.As(err, &catalog):
		p.counts.CatalogRefused++
		p.latency.Record(took)
	default:
		p.counts.Failed++
		p.latency.Record(took)
		msg, _, _ := strings.Cut(err.Error(), "\n")
		p.fail(g, inst, msg)
	}
	if !p.seen.check(renderKey{g.Generation, files, inst.Name}, renderDigest(out, err)) {
		p.counts.Inconsistent++
		p.fail(g, inst, "the outcome differs from an earlier render of the same instance against the same files")
	}
}

// fail keeps the first unexpected render failures; p.mu is held.
func (p *Pool) fail(g platform.Generated, inst Instance, msg string) {
	if len(p.failures) < maxFailureDetails {
		p.failures = append(p.failures, "generation "+strconv.FormatInt(g.Generation, 10)+", instance "+inst.Name+": "+msg)
	}
}

// Done returns how many renders have finished.
func (p *Pool) Done() int64 { return p.done.Load() }

// Outstanding returns how many leases the pool holds now.
func (p *Pool) Outstanding() int64 { return p.outstanding.Load() }

// MaxOutstanding returns the most leases the pool held at once.
func (p *Pool) MaxOutstanding() int64 { return p.maxOut.Load() }

// Results returns the render counts, latencies and the first unexpected
// failures.
func (p *Pool) Results() (RenderCounts, Histogram, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts, p.latency, append([]string(nil), p.failures...)
}
