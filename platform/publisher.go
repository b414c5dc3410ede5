package platform

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// PublisherOptions configures a [Publisher]. The zero value is a durable
// publisher with a fresh kernel and no logging.
type PublisherOptions struct {
	Kernel    *kernel.Kernel     // nil: kernel.New()
	Logger    *slog.Logger       // nil: no logging
	NoSync    bool               // the layout's durability off, for disks wiped at boot
	OnPublish func(PublishEvent) // optional; called once per Publish after its outcome is known, never under a lock
	OnReclaim func(ReclaimEvent) // optional; called after each directory removal attempt, never under a lock

	// RetryMin is the reclaim loop's first wait after a failed removal
	// (zero: 100ms); each further failure doubles it, up to RetryMax
	// (zero: 30s).
	RetryMin, RetryMax time.Duration

	// RemovalDeadline is how long the reclaim loop waits for a directory's
	// removal before it reports it as stalled (zero:
	// [dirlife.DefaultRemovalDeadline]); the removal goes on, and the loop
	// retries the report with backoff until it is over.
	RemovalDeadline time.Duration
}

const (
	defaultRetryMin = 100 * time.Millisecond
	defaultRetryMax = 30 * time.Second
)

// A Publisher runs one reconcile's disk-and-store sequence in the only safe
// order: Write, BuildPlatform, SetGenerated (refusing a stale generation),
// Prune to the current and every leased generation. It boots by emptying
// Root before any reader exists, removes a superseded generation's
// directory soon after its last lease is released (while [Publisher.Run]
// runs), and never rewrites or removes a leased directory.
//
// A Publisher is safe for concurrent use by multiple goroutines. Publish,
// Forget, Boot and every prune are serialised: they run one at a time, so
// a prune never races a publish of the same Publisher. A prune only takes
// directories out of their paths; their removal runs in the background,
// never on a caller's goroutine while the serialisation is held, so a
// removal that hangs blocks no Publish, Forget, lease, render or reclaim
// of another generation (Run reports it past RemovalDeadline). Renders
// and leases take no lock of the Publisher's. Two Publishers must not
// share a Root.
type Publisher struct {
	layout    Layout
	kernel    *kernel.Kernel
	log       *slog.Logger
	onPublish func(PublishEvent)
	onReclaim func(ReclaimEvent)
	retryMin  time.Duration
	retryMax  time.Duration

	store   Store
	booted  atomic.Bool
	running atomic.Int32 // reclaim loops running
	stalled atomic.Int64 // entries whose removal ran past the deadline at the last look

	// sem serialises Boot, Publish, Forget and reclaims; a channel so
	// that a wait for it honours a context.
	sem chan struct{}

	// Under sem.
	files      platformmodule.Files                                               // the current generation's files, as published
	superseded map[int64]time.Time                                                // generations no longer current, since when
	prune      func(keep ...int64) error                                          // Layout.Prune; a test seam
	write      func(generation int64, files platformmodule.Files) (string, error) // Layout.Write; a test seam
	settleDisk func(ctx context.Context) error                                    // the layout's SettleContext; a test seam
	dirty      bool                                                               // Root may hold entries that are not generation directories

	poke chan struct{} // asks the reclaim loop to retry; capacity 1

	statsMu    sync.Mutex
	stats      Stats // the counters; the rest is read at Stats time
	reclaimErr error // the removal failure not yet overcome by a retry
}

// NewPublisher returns a Publisher whose layout owns root. It touches
// nothing on disk: call [Publisher.Boot] (or Start) before Publish.
func NewPublisher(root string, opts PublisherOptions) *Publisher {
	p := &Publisher{
		layout:     Layout{Root: root, NoSync: opts.NoSync, RemovalDeadline: opts.RemovalDeadline, deferRemoval: true},
		kernel:     opts.Kernel,
		log:        opts.Logger,
		onPublish:  opts.OnPublish,
		onReclaim:  opts.OnReclaim,
		retryMin:   opts.RetryMin,
		retryMax:   opts.RetryMax,
		sem:        make(chan struct{}, 1),
		superseded: make(map[int64]time.Time),
		poke:       make(chan struct{}, 1),
	}
	if p.kernel == nil {
		p.kernel = kernel.New()
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.retryMin <= 0 {
		p.retryMin = defaultRetryMin
	}
	if p.retryMax <= 0 {
		p.retryMax = defaultRetryMax
	}
	p.retryMax = max(p.retryMax, p.retryMin)
	p.prune = p.layout.Prune
	p.write = p.layout.Write
	p.settleDisk = p.layout.dirs().SettleContext
	return p
}

// lock takes the Publisher's serialisation, or returns ctx.Err() if ctx
// ends first.
func (p *Publisher) lock(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Publisher) unlock() { <-p.sem }

// Boot empties Root and makes sure it exists: the boot step, before any
// reader exists (disk is ephemeral, the resource is the source of truth,
// and the first reconcile regenerates). Until Boot succeeds, Publish,
// Render and Run return [ErrNotBooted]. Boot is idempotent: once it has
// succeeded, later calls do nothing and return nil at once (they do not
// wait for a Publish that is draining leases), so a Root with leased
// directories is never emptied.
func (p *Publisher) Boot() error {
	if p.booted.Load() {
		return nil
	}
	_ = p.lock(context.Background())
	defer p.unlock()
	if p.booted.Load() {
		return nil
	}
	if err := p.layout.Reset(); err != nil {
		p.log.Error("platform: boot failed", "root", p.layout.Root, "err", err)
		return err
	}
	p.booted.Store(true)
	p.log.Info("platform: booted", "root", p.layout.Root)
	return nil
}

// Start boots the Publisher and runs its reclaim loop until ctx ends: it
// satisfies controller-runtime's manager.Runnable. It returns Boot's error,
// or nil when ctx ends.
func (p *Publisher) Start(ctx context.Context) error {
	if err := p.Boot(); err != nil {
		return err
	}
	return p.Run(ctx)
}

// Store returns the Publisher's store, for readers: Lease, Generated,
// Generation, Leased. Writing it (SetGenerated, Clear) bypasses the
// Publisher's sequence; use Publish and Forget instead.
func (p *Publisher) Store() *Store { return &p.store }

// Layout returns the Publisher's layout. Its Root belongs to the
// Publisher: use it to read (Dir, Generations, Settle), not to write or
// prune.
func (p *Publisher) Layout() Layout {
	l := p.layout
	l.deferRemoval = false
	return l
}

// Stats returns a snapshot of the Publisher for metrics. It lists Root,
// and takes no lock that a Publish holds while it waits.
func (p *Publisher) Stats() Stats {
	p.statsMu.Lock()
	s := p.stats
	p.statsMu.Unlock()
	s.StalledRemovals = p.stalled.Load()
	s.Generation = p.store.Generation()
	s.OnDisk, _ = p.layout.Generations()
	s.Leased = p.store.Leased()
	s.Leases = p.store.leases()
	return s
}

// Render leases the current record, renders inst against its platform with
// the record's skew policy, and releases the lease; it returns the output
// and the record it rendered against. It returns [ErrNotReady] when no
// platform is held: before the first Publish, after Forget, and while a
// changed current generation waits for its leases to drain. Render takes
// no lock of the Publisher's and may run concurrently with everything.
func (p *Publisher) Render(ctx context.Context, inst kernel.Instance) (kernel.RenderOutput, Generated, error) {
	if !p.booted.Load() {
		return kernel.RenderOutput{}, Generated{}, ErrNotBooted
	}
	rec, release, ok := p.store.Lease()
	if !ok {
		return kernel.RenderOutput{}, Generated{}, ErrNotReady
	}
	defer release()
	out, err := p.kernel.Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: inst, Skew: rec.Skew})
	return out, rec, err
}
