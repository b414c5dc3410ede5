package platform

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// An Evaluator builds platforms and reads and renders instances: a
// [*kernel.Kernel], which evaluates in the caller's process, or an
// [*isolate.Workers], which evaluates in worker processes that a budget or
// a cancelled context can stop. Both give the same results and errors for
// the same input; Workers adds its own when a worker is killed past a
// budget or lost ([*isolate.BudgetError], [*isolate.WorkerError]).
type Evaluator interface {
	BuildPlatform(ctx context.Context, dir string) (*kernel.Platform, error)
	ReadInstance(ctx context.Context, in kernel.Instance) (*kernel.InstanceSnapshot, error)
	Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error)

	// Bounds returns the Limits the evaluator reads and evaluates under,
	// as set: a zero field means its default. They are part of every
	// RenderKey.
	Bounds() kernel.Limits
}

// PublisherOptions configures a [Publisher]. The zero value is a durable
// publisher with a fresh kernel and no logging. A field that
// [publish.Options] also has means what it means there.
type PublisherOptions struct {
	Evaluator Evaluator // nil: kernel.New()

	Logger             *slog.Logger       // as [publish.Options].Logger
	NoSync             bool               // as [publish.Options].NoSync
	OnPublish          func(PublishEvent) // as [publish.Options].OnPublish
	OnReclaim          func(ReclaimEvent) // as [publish.Options].OnReclaim
	RetryMin, RetryMax time.Duration      // as [publish.Options].RetryMin and RetryMax
	RemovalDeadline    time.Duration      // as [publish.Options].RemovalDeadline

	// MemoBudget is the most bytes the render memo accounts for (zero:
	// [DefaultMemoBudget]; negative: no memo). An entry is accounted at
	// the length of its output's encoding plus its key's; the least recently used
	// entries are evicted until the rest fit. What each instance content
	// reads of a platform ([kernel.ReadsOf]) is remembered beside it, in
	// an eighth of the budget again.
	MemoBudget int64

	// AdmissionCapacity is the most bytes of instance and platform files
	// that the renders evaluating at once may weigh together (zero:
	// [DefaultAdmissionCapacity]; negative: no bound). A render heavier
	// than the capacity runs alone. A memo hit is never admitted: it
	// never waits.
	AdmissionCapacity int64
}

// platformPublisher is the generic publisher a Publisher instantiates.
type platformPublisher = publish.Publisher[int64, *kernel.Platform, kernel.SkewPolicy]

// A Publisher is a [publish.Publisher] with the generation as key,
// its [Evaluator]'s BuildPlatform as build step and the skew policy as the
// per-publish value: Write, BuildPlatform, SetGenerated (refusing a stale
// generation), then removal of every directory that is neither current
// nor leased. It boots by emptying Root before any reader exists, removes
// a replaced directory soon after its last lease is released (while
// [Publisher.Run] runs), and never writes over a directory: a changed
// module at the current generation gets a directory of its own, written
// beside the current one and swapped in, so no render is refused and no
// Publish waits for one.
//
// A Publisher is made by [NewPublisher]; the zero value has no Root, and
// each of its methods panics. A Publisher is safe for concurrent use by
// multiple goroutines. Publish, Forget, Boot and every removal are
// serialised. Renders and leases take no lock of the Publisher's. Two
// Publishers must not share a Root.
type Publisher struct {
	pub       *platformPublisher
	root      string
	noSync    bool
	deadline  time.Duration
	evaluator Evaluator
	store     Store // its slot is the one pub sets and leases from

	memo      *memo       // renders by RenderKey; entries that name a reclaimed directory go
	reads     *readsCache // what each instance content reads of a platform
	admission *admission  // of the renders that evaluate
}

// NewPublisher returns a Publisher whose layout owns root. It touches
// nothing on disk: call [Publisher.Boot] (or Start) before Publish.
func NewPublisher(root string, opts PublisherOptions) *Publisher {
	p := &Publisher{root: root, noSync: opts.NoSync, deadline: opts.RemovalDeadline, evaluator: opts.Evaluator}
	if p.evaluator == nil {
		p.evaluator = kernel.New()
	}
	p.memo = newMemo(orDefault(opts.MemoBudget, DefaultMemoBudget))
	p.reads = newReadsCache(p.memo.budget / 8)
	p.admission = newAdmission(orDefault(opts.AdmissionCapacity, DefaultAdmissionCapacity))
	gopts := publish.Options[int64, *kernel.Platform, kernel.SkewPolicy]{
		Slot:            &p.store.slot,
		Logger:          opts.Logger,
		NoSync:          opts.NoSync,
		RetryMin:        opts.RetryMin,
		RetryMax:        opts.RetryMax,
		RemovalDeadline: opts.RemovalDeadline,
		OnPublish:       opts.OnPublish,
		Check:           check,
		Refused:         kernel.IsRefusal,
		MapError:        platformError, // what the caller gets, OnPublish sees and the log says
	}
	gopts.OnReclaim = func(ev ReclaimEvent) {
		// A removal that failed still took the directory out of every
		// path: the identity is never leased again.
		if ev.Identity != (publish.Identity[int64]{}) {
			p.memo.drop(ev.Identity)
		}
		if opts.OnReclaim != nil {
			opts.OnReclaim(ev)
		}
	}
	p.pub = publish.New(root, genCodec, p.evaluator.BuildPlatform, gopts)
	return p
}

// orDefault returns n, or def when n is zero, or 0 when n is negative.
func orDefault(n, def int64) int64 {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// errZeroPublisher is the panic value of a method of a Publisher that
// NewPublisher did not make.
const errZeroPublisher = "platform: Publisher not made by NewPublisher: the zero Publisher has no Root"

// mustBeMade panics unless NewPublisher made p.
func (p *Publisher) mustBeMade() {
	if p.pub == nil {
		panic(errZeroPublisher)
	}
}

// gen returns the generic publisher p instantiates; it panics unless
// NewPublisher made p.
func (p *Publisher) gen() *platformPublisher {
	p.mustBeMade()
	return p.pub
}

// Boot is [publish.Publisher.Boot]: it empties Root before any reader
// exists (disk is ephemeral, the resource is the source of truth); until
// it succeeds, Publish, Render and Run return [ErrNotBooted].
func (p *Publisher) Boot() error { return p.gen().Boot() }

// Start is [publish.Publisher.Start]: Boot, then Run until ctx ends, as
// controller-runtime's manager.Runnable.
func (p *Publisher) Start(ctx context.Context) error { return p.gen().Start(ctx) }

// Run is [publish.Publisher.Run], the reclaim loop.
func (p *Publisher) Run(ctx context.Context) error { return p.gen().Run(ctx) }

// Forget is [publish.Publisher.Forget], for a deleted Platform resource:
// the store holds nothing afterwards.
func (p *Publisher) Forget() { p.gen().Forget() }

// Store returns the Publisher's store, for readers: Lease, Generated,
// Generation, Leased. It is the very slot the Publisher sets and leases
// from. Writing it (SetGenerated, Clear) bypasses the Publisher's
// sequence; use Publish and Forget instead.
func (p *Publisher) Store() *Store {
	p.mustBeMade()
	return &p.store
}

// Layout returns a layout on the Publisher's Root, for reading. The
// Publisher names its directories itself ([Generated.Dir] is where the
// current record lives: gen-<n>, or gen-<n>-<digest> for a later content
// of the same generation), so Layout.Dir(g) is not necessarily the
// current directory, and Layout.Generations lists only the gen-<n> ones.
// Root belongs to the Publisher: do not write or prune through it.
func (p *Publisher) Layout() Layout {
	p.mustBeMade()
	return Layout{Root: p.root, NoSync: p.noSync, RemovalDeadline: p.deadline}
}

// Stats returns a snapshot of the Publisher for metrics. It takes no lock
// that a Publish holds while it writes or builds.
func (p *Publisher) Stats() Stats {
	s := Stats{Stats: p.gen().Stats(), Memo: p.memo.snapshot(), Admission: p.admission.snapshot()}
	if ws, ok := p.evaluator.(*isolate.Workers); ok {
		s.Workers = ws.Stats()
	}
	return s
}

// Render leases the current record, renders inst against its platform
// with the record's skew policy, and releases the lease; it returns the
// output and the record it rendered against. It returns [ErrNotReady] when
// no platform is held, and takes none of the locks Publish holds.
//
// A render is looked up by its [RenderKey] in the Publisher's memo, keyed
// on what it reads of the platform rather than on the generation: a render
// against a new generation that changed nothing it reads (a catalog the
// instance does not require, say) hits the entry an earlier generation
// left, and returns what a fresh render would, byte for byte. A hit
// returns a copy and reads nothing of the platform's directory. An
// instance in Files is keyed by their digest; one in a Dir is read once,
// hit or miss. A miss evaluates once for every render of the key against
// the record that waits for it, after admission
// ([PublisherOptions].AdmissionCapacity); an evaluation that panics makes
// each waiting render panic with the same value. When ctx ends, Render
// returns ctx.Err() at once. Only errors of the instance's content are
// memoized, as [kernel.IsContent] tells them; one that names the
// platform's directory serves only renders against that directory.
func (p *Publisher) Render(ctx context.Context, inst kernel.Instance) (kernel.RenderOutput, Generated, error) {
	p.mustBeMade()
	if !p.pub.Booted() {
		return kernel.RenderOutput{}, Generated{}, ErrNotBooted
	}
	l, ok := p.store.slot.Lease()
	if !ok {
		return kernel.RenderOutput{}, Generated{}, ErrNotReady
	}
	defer l.Release()
	out, rec, _, err := p.renderRecord(ctx, generatedOf(l.Value()), inst)
	return out, rec, err
}

// RenderLeased is [Publisher.Render] against rec, a record the caller
// leased from the Publisher's [Store] and has not yet released, for a
// caller that holds one lease across several renders; it also returns the
// render's key, for a controller to record in status (the zero key when it
// fails to read the instance). A record not leased may have lost its
// directory: a miss then fails, and nothing is memoized of it. A record
// set by hand (no Identity) is never memoized.
func (p *Publisher) RenderLeased(ctx context.Context, rec Generated, inst kernel.Instance) (kernel.RenderOutput, RenderKey, error) {
	p.mustBeMade()
	if !p.pub.Booted() {
		return kernel.RenderOutput{}, RenderKey{}, ErrNotBooted
	}
	out, _, key, err := p.renderRecord(ctx, rec, inst)
	return out, key, err
}

// Key returns the key a render of inst against rec would have, computed
// without evaluating: it reads inst as Render does (an instance in a Dir
// is read; one in Files is hashed) and parses its files, once for each
// content (see [kernel.ReadsOf]). A controller that recorded the key of a
// render compares it with Key to tell whether a render against rec can
// give another result: equal keys, equal results. A key that
// [Publisher.RenderLeased] returned for a result that names the
// platform's directory never equals Key's. Key blocks only while it
// reads a Dir, and returns ctx.Err() once ctx is done; it fails when the
// instance cannot be read or rec holds no platform, and changes nothing.
func (p *Publisher) Key(ctx context.Context, rec Generated, inst kernel.Instance) (RenderKey, error) {
	p.mustBeMade()
	key, _, err := p.keyOf(ctx, rec, inst)
	return key, err
}

// keyOf returns the key of a render of inst against rec and, for an
// instance read from a Dir, the snapshot read; one in Files is read only
// by a miss, which reads the same bytes under the Limits.
func (p *Publisher) keyOf(ctx context.Context, rec Generated, inst kernel.Instance) (RenderKey, *kernel.InstanceSnapshot, error) {
	if rec.Platform == nil {
		return RenderKey{}, nil, errNoPlatform
	}
	if inst.Files != nil && inst.Dir == "" {
		digest := kernel.Digest(inst.Files)
		return p.key(rec, digest, filesDir, p.reads.of(digest, func() kernel.Reads { return kernel.ReadsOf(inst.Files) })), nil, nil
	}
	snap, err := p.readInstance(ctx, inst)
	if err != nil {
		return RenderKey{}, nil, err
	}
	return p.key(rec, snap.Digest(), snap.Dir(), p.reads.of(snap.Digest(), snap.Reads)), snap, nil
}

// errNoPlatform is the failure of a render, or of a key, of a record that
// holds no platform.
var errNoPlatform = errors.New("platform: render: the record holds no platform (Generated.Platform is nil)")

// renderRecord renders inst against rec, which the caller holds leased.
func (p *Publisher) renderRecord(ctx context.Context, rec Generated, inst kernel.Instance) (kernel.RenderOutput, Generated, RenderKey, error) {
	if rec.Identity == (publish.Identity[int64]{}) || rec.Platform == nil {
		// A record set by hand names a directory that may change: its
		// renders are neither memoized nor shared.
		p.memo.bypass()
		snap, err := p.readInstance(ctx, inst)
		if err != nil {
			return kernel.RenderOutput{}, rec, RenderKey{}, err
		}
		out, err := p.evaluate(ctx, rec, snap)
		var key RenderKey
		if rec.Platform != nil {
			key = p.key(rec, snap.Digest(), snap.Dir(), p.reads.of(snap.Digest(), snap.Reads))
		}
		return out, rec, key, err
	}
	key, snap, err := p.keyOf(ctx, rec, inst)
	if err != nil {
		return kernel.RenderOutput{}, rec, RenderKey{}, err
	}
	if e, ok := p.memo.lookup(key, rec); ok {
		out, err := e.result()
		return out, rec, e.key(key), err
	}
	if snap == nil {
		if snap, err = p.readInstance(ctx, inst); err != nil {
			return kernel.RenderOutput{}, rec, key, err
		}
	}
	out, key, err := p.memo.evaluate(ctx, key, rec, func(ctx context.Context) (kernel.RenderOutput, error) { return p.evaluate(ctx, rec, snap) })
	return out, rec, key, err
}

// readInstance reads inst with the evaluator.
func (p *Publisher) readInstance(ctx context.Context, inst kernel.Instance) (*kernel.InstanceSnapshot, error) {
	return p.evaluator.ReadInstance(ctx, inst)
}

// key returns the key of a render against rec, which holds a platform,
// of an instance with the digest, the name its errors give it and the
// reads.
func (p *Publisher) key(rec Generated, digest, dir string, reads kernel.Reads) RenderKey {
	return RenderKey{
		Dependencies: reads.Dependencies(rec.Platform, rec.Skew),
		Instance:     digest, InstanceDir: dir,
		Limits: p.evaluator.Bounds(), Version: moduleVersion(),
	}
}

// evaluate renders snap against rec, once admitted.
func (p *Publisher) evaluate(ctx context.Context, rec Generated, snap *kernel.InstanceSnapshot) (kernel.RenderOutput, error) {
	weight := snap.Size()
	if rec.Platform != nil {
		weight += rec.Platform.Size()
	}
	release, err := p.admission.acquire(ctx, weight)
	if err != nil {
		return kernel.RenderOutput{}, err
	}
	defer release()
	in := kernel.RenderInput{Platform: rec.Platform, Snapshot: snap, Skew: rec.Skew}
	return p.evaluator.Render(ctx, in)
}
