package platformtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/platform/platformtest"
	"leasekit.dev/publish"
)

// kern is the kernel every reconciler of these tests builds with.
var kern = kernel.New()

// A bug is one of the classic mistakes of a hand-written reconciler.
type bug int

const (
	correct           bug = iota
	pruneBeforeSet        // Write, Prune(Leased ∪ {new}), Build, Set
	keepWithoutLeased     // Prune keeps the current generation only
	rewriteLeased         // a changed current generation is written over in place
	resetWithReaders      // Delete resets Root while renders read it
	acceptStale           // an older generation is set like a newer one

	// The quiet ones.
	ignoreNewer         // once a generation is served, every newer one returns nil unserved
	neverSet            // writes, builds and prunes, but never calls SetGenerated
	scratchPlatform     // the Platform is built from a scratch copy, removed after the build
	identicalOverLeased // an identical module is written again, over the leased directory
)

func (b bug) String() string {
	return [...]string{"correct", "prune before set", "keep set without Leased", "leased generation rewritten in place", "reset while readers exist", "stale generation accepted",
		"ignores newer generations", "never calls SetGenerated", "Platform built from a scratch copy", "identical module rewritten over the leased directory"}[b]
}

// operator is a reconciler in the reference operator's style: it calls
// Store and Layout by hand, in the order Write, build, set if newer, Prune
// to the current and every leased generation. With a bug other than
// correct it makes that mistake.
type operator struct {
	layout platform.Layout
	store  platform.Store
	files  platformmodule.Files // the files of the record held
	bug    bug
	refuse bool // fail a write of a leased generation rather than wait

	// Choices the defaults allow and stricter options do not.
	rewriteIdentical bool // write and build identical files again
	clearOnFailure   bool // a failed build of a new generation leaves the store empty

	// Mistakes of another kind.
	noPrune    bool          // never removes a directory
	hang       bool          // Reconcile waits for its context to end
	hangDelete bool          // Delete waits for its context to end
	slow       time.Duration // each Reconcile sleeps this long first, once one has hung
	hung       *hangSignal   // the hangs of every target made like this one; nil: none watched
}

// A hangSignal watches the Reconciles and Deletes that hang, for a test
// that gives Check the deadline bound: that bound passes once the first
// hang has lasted a while, and a hang Check gives up on before it has
// passed is noted.
type hangSignal struct {
	after  time.Duration // how long the first hang lasts before the bound passes
	once   sync.Once
	hung   atomic.Bool
	passed chan struct{} // the bound: closed once the first hang has lasted after
	waits  sync.WaitGroup
	early  atomic.Bool // Check gave a hang up before the bound had passed
}

func newHangSignal(after time.Duration) *hangSignal {
	return &hangSignal{after: after, passed: make(chan struct{})}
}

// hang waits until Check gives the Reconcile or Delete that hangs up,
// which ends its context.
func (h *hangSignal) hang(ctx context.Context) error {
	if h == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	h.waits.Add(1)
	defer h.waits.Done()
	h.hung.Store(true)
	h.once.Do(func() { time.AfterFunc(h.after, func() { close(h.passed) }) })
	<-ctx.Done()
	select {
	case <-h.passed:
	default:
		h.early.Store(true)
	}
	return ctx.Err()
}

// hasHung reports whether a Reconcile or Delete has hung.
func (h *hangSignal) hasHung() bool { return h != nil && h.hung.Load() }

// givenUpEarly waits until every hang has returned, and reports whether
// Check gave one up before the bound had passed.
func (h *hangSignal) givenUpEarly() bool {
	h.waits.Wait()
	return h.early.Load()
}

// newOperator returns Check's newTarget for an operator with bug.
func newOperator(b bug) func(root string) (platformtest.Target, error) {
	return operatorTarget(&operator{bug: b})
}

// operatorTarget returns Check's newTarget for operators like o.
func operatorTarget(like *operator) func(root string) (platformtest.Target, error) {
	return func(root string) (platformtest.Target, error) {
		o := &operator{layout: platform.Layout{Root: root, NoSync: true}, bug: like.bug, refuse: like.refuse,
			rewriteIdentical: like.rewriteIdentical, clearOnFailure: like.clearOnFailure, noPrune: like.noPrune, hang: like.hang,
			hangDelete: like.hangDelete, slow: like.slow, hung: like.hung}
		// The boot step, before any reader: the resource is the source of
		// truth and the first reconcile regenerates.
		if err := o.layout.Reset(); err != nil {
			return nil, err
		}
		return o, nil
	}
}

func (o *operator) Store() *platform.Store { return &o.store }

func (o *operator) Reconcile(ctx context.Context, gen int64, files platformmodule.Files) error {
	if o.hang {
		return o.hung.hang(ctx)
	}
	if o.hung.hasHung() {
		time.Sleep(o.slow) // a slow Reconcile, which no verdict may take for a hang
	}
	cur, held := o.store.Generated()
	switch {
	case held && gen < cur.Generation && o.bug != acceptStale:
		return &publish.StaleError[int64]{Key: gen, Current: cur.Generation}
	case held && gen > cur.Generation && o.bug == ignoreNewer:
		return o.prune() // the bug: nothing newer is ever written
	case held && gen == cur.Generation && same(files, o.files) && o.bug == identicalOverLeased:
		return o.write(ctx, gen, files) // the bug: Layout.Write swaps a copy in over the leased directory
	case held && gen == cur.Generation && same(files, o.files) && !o.rewriteIdentical:
		return o.prune() // nothing to write; drop what readers released since
	case held && gen == cur.Generation && o.bug != rewriteLeased:
		return o.rewrite(ctx, cur, files)
	}
	if o.bug != rewriteLeased {
		// A deleted resource's generation that a render still reads: the
		// store holds another, so no new lease on it can start.
		if err := o.waitUnleased(ctx, gen); err != nil {
			return err
		}
	}
	return o.write(ctx, gen, files)
}

// write writes gen's directory, builds it, sets it and prunes.
func (o *operator) write(ctx context.Context, gen int64, files platformmodule.Files) error {
	dir, err := o.layout.Write(gen, files)
	if err != nil {
		return err
	}
	if o.bug == pruneBeforeSet {
		if err := o.layout.Prune(append(o.store.Leased(), gen)...); err != nil {
			return err
		}
	}
	plat, err := o.build(ctx, dir)
	if err != nil {
		if o.clearOnFailure {
			o.store.Clear()
			o.files = nil
		}
		return errors.Join(err, o.prune()) // the failed directory goes
	}
	if o.bug != neverSet {
		o.store.SetGenerated(platform.Generated{Generation: gen, Dir: dir, Platform: plat})
		o.files = maps.Clone(files)
	}
	return o.prune()
}

// build builds the platform in dir; with the bug scratchPlatform, from a
// copy of dir that it then removes.
func (o *operator) build(ctx context.Context, dir string) (*kernel.Platform, error) {
	if o.bug != scratchPlatform {
		return kern.BuildPlatform(ctx, dir)
	}
	scratch, err := os.MkdirTemp("", "scratch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	if err := os.CopyFS(scratch, os.DirFS(dir)); err != nil {
		return nil, err
	}
	return kern.BuildPlatform(ctx, scratch)
}

// rewrite makes changed files the current generation's: it stops new
// leases, and writes once no render holds the directory, putting the old
// files back when the new ones fail to build.
func (o *operator) rewrite(ctx context.Context, cur platform.Generated, files platformmodule.Files) error {
	o.store.Clear() // a lease that raced this is in Leased from now on
	if err := o.waitUnleased(ctx, cur.Generation); err != nil {
		o.store.SetGenerated(cur)
		return err
	}
	dir, err := o.layout.Write(cur.Generation, files)
	var plat *kernel.Platform
	if err == nil {
		plat, err = o.build(ctx, dir)
	}
	if err != nil {
		if _, werr := o.layout.Write(cur.Generation, o.files); werr != nil {
			o.files = nil // the store stays empty: its directory is not the record's
			return errors.Join(err, werr)
		}
		o.store.SetGenerated(cur)
		return err
	}
	o.store.SetGenerated(platform.Generated{Generation: cur.Generation, Dir: dir, Platform: plat})
	o.files = maps.Clone(files)
	return o.prune()
}

// waitUnleased waits until no render holds gen, or, when o refuses, fails
// if one does. The store must not hold gen, so that no new lease on it
// starts.
func (o *operator) waitUnleased(ctx context.Context, gen int64) error {
	for slices.Contains(o.store.Leased(), gen) {
		if o.refuse {
			return fmt.Errorf("generation %d is leased by a render; retry once it is released", gen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// prune keeps the current and every leased generation.
func (o *operator) prune() error {
	if o.noPrune {
		return nil
	}
	keep := o.store.Leased()
	if o.bug == keepWithoutLeased {
		keep = nil
	}
	if g := o.store.Generation(); g != 0 {
		keep = append(keep, g)
	}
	return o.layout.Prune(keep...)
}

func (o *operator) Delete(ctx context.Context) error {
	if o.hangDelete {
		return o.hung.hang(ctx)
	}
	o.store.Clear()
	o.files = nil
	if o.bug == resetWithReaders {
		return o.layout.Reset()
	}
	return o.prune()
}

func same(a, b platformmodule.Files) bool {
	return b != nil && maps.EqualFunc(a, b, bytes.Equal)
}

// publisher is a platform.Publisher as a Target, with its reclaim loop
// running.
type publisher struct {
	pub    *platform.Publisher
	cancel context.CancelFunc
	done   chan struct{}
}

func newPublisher(root string) (platformtest.Target, error) {
	pub := platform.NewPublisher(root, platform.PublisherOptions{Evaluator: kern, NoSync: true})
	if err := pub.Boot(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &publisher{pub: pub, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = pub.Run(ctx)
	}()
	return p, nil
}

func (p *publisher) Reconcile(ctx context.Context, gen int64, files platformmodule.Files) error {
	_, err := p.pub.Publish(ctx, gen, files, kernel.SkewWarn)
	return err
}

func (p *publisher) Delete(context.Context) error {
	p.pub.Forget()
	return nil
}

func (p *publisher) Store() *platform.Store { return p.pub.Store() }

// Close stops the reclaim loop.
func (p *publisher) Close() error {
	p.cancel()
	<-p.done
	return nil
}

// ignoringPublisher is a platform.Publisher under a reconciler with a bug:
// once a generation is served, it returns nil for every newer one without
// publishing it.
type ignoringPublisher struct{ *publisher }

func newIgnoringPublisher(root string) (platformtest.Target, error) {
	p, err := newPublisher(root)
	if err != nil {
		return nil, err
	}
	return ignoringPublisher{p.(*publisher)}, nil
}

func (p ignoringPublisher) Reconcile(ctx context.Context, gen int64, files platformmodule.Files) error {
	if cur := p.pub.Store().Generation(); cur != 0 && gen > cur {
		return nil
	}
	return p.publisher.Reconcile(ctx, gen, files)
}
