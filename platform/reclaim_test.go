package platform_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// warmKernel builds once outside any bubble, so that whatever the CUE
// evaluator initialises lazily is not tied to a synctest bubble.
func warmKernel(t *testing.T) {
	t.Helper()
	p := newBooted(t, platform.PublisherOptions{})
	if _, err := p.Publish(context.Background(), 1, moduletest.Variant(0), 0); err != nil {
		t.Fatal(err)
	}
}

type publishResult struct {
	rec platform.Generated
	err error
}

func publishAsync(p *platform.Publisher, ctx context.Context, gen int64, v int, t *testing.T) <-chan publishResult {
	files := moduletest.Variant(v)
	done := make(chan publishResult, 1)
	go func() {
		rec, err := p.Publish(ctx, gen, files, 0)
		done <- publishResult{rec, err}
	}()
	return done
}

// heldTurn boots a Publisher, publishes generation 1 and starts a publish
// of generation 1 with other files whose build blocks, so that it holds the
// Publisher's turn: release lets it finish. Call it inside a synctest
// bubble.
func heldTurn(t *testing.T) (p *platform.Publisher, release func(), rewrite <-chan publishResult) {
	t.Helper()
	ev := &gatedBuild{Kernel: kernel.New(), gate: make(chan struct{})}
	p = newBooted(t, platform.PublisherOptions{Evaluator: ev})
	if _, err := p.Publish(context.Background(), 1, moduletest.Variant(0), 0); err != nil {
		t.Fatal(err)
	}
	ev.armed.Store(true)
	rewrite = publishAsync(p, context.Background(), 1, 1, t)
	synctest.Wait()
	return p, sync.OnceFunc(func() { close(ev.gate) }), rewrite
}

// gatedBuild is the kernel with a BuildPlatform that waits for gate once
// armed.
type gatedBuild struct {
	*kernel.Kernel
	armed atomic.Bool
	gate  chan struct{}
}

func (g *gatedBuild) BuildPlatform(ctx context.Context, dir string) (*kernel.Platform, error) {
	if g.armed.Load() {
		<-g.gate
	}
	return g.Kernel.BuildPlatform(ctx, dir)
}

// A changed current generation is written beside its leased directory and
// swapped in: the Publish waits for no render, a lease is granted at every
// instant, the leased directory keeps its files until released, and then
// it goes.
func TestRewriteBesideLeasedGeneration(t *testing.T) {
	var events []platform.PublishEvent
	var reclaims []platform.ReclaimEvent
	p := newBooted(t, platform.PublisherOptions{
		OnPublish: func(ev platform.PublishEvent) { events = append(events, ev) },
		OnReclaim: func(ev platform.ReclaimEvent) { reclaims = append(reclaims, ev) },
	})
	ctx := context.Background()
	old, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, release1, _ := p.Store().Lease()
	_, release2, _ := p.Store().Lease()

	rec, err := p.Publish(ctx, 1, moduletest.Variant(1), 0) // returns: nothing to wait for
	if err != nil || rec.Generation != 1 || rec.Dir == old.Dir || rec.Identity == old.Identity {
		t.Fatalf("rewrite of a leased generation = %+v, %v; want generation 1 in a directory beside %s", rec, err, old.Dir)
	}
	if got, _, ok := p.Store().Lease(); !ok || got != rec {
		t.Fatalf("after the rewrite, Lease() = %+v, %v; want the new record", got, ok)
	}
	checkTree(t, old.Dir, moduletest.Variant(0))
	checkTree(t, rec.Dir, moduletest.Variant(1))
	if n := len(events); n != 2 || events[1].Outcome != publish.Changed || events[1].Identity != rec.Identity {
		t.Fatalf("events = %+v, want published then changed", events)
	}

	release1()
	p.ReclaimNow()
	checkTree(t, old.Dir, moduletest.Variant(0)) // still leased once
	release2()
	p.ReclaimNow()
	if _, err := os.Lstat(old.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after its last release and a reclaim, %s: %v, want it gone", old.Dir, err)
	}
	if len(reclaims) != 1 || reclaims[0].Identity != old.Identity || reclaims[0].Identity.Key != 1 {
		t.Fatalf("reclaims %+v, want the old content of generation 1", reclaims)
	}
	if st := p.Stats(); st.Changes != 1 || st.Publishes != 2 || !slices.Equal(onDisk(st), []int64{1}) || len(st.Dirs) != 1 {
		t.Fatalf("Stats() = %+v", st)
	}
}

// A generation forgotten while leased is published again beside its
// leased directory, which keeps its files until released.
func TestPublishOfForgottenLeasedGeneration(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	old, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, release, _ := p.Store().Lease()
	p.Forget()
	checkTree(t, old.Dir, moduletest.Variant(0))
	rec, err := p.Publish(ctx, 1, moduletest.Variant(1), 0)
	if err != nil || rec.Dir == old.Dir {
		t.Fatalf("publish over a leased forgotten generation = %+v, %v", rec, err)
	}
	checkTree(t, old.Dir, moduletest.Variant(0))
	checkTree(t, rec.Dir, moduletest.Variant(1))
	release()
	p.ReclaimNow()
	if dirs := genDirs(t, p.Layout().Root); !slices.Equal(dirs, []string{rec.Dir}) {
		t.Fatalf("after the release, Root holds %v, want only %s", dirs, rec.Dir)
	}
}

// The reclaim loop removes a superseded generation as soon as its last
// lease is released, without another Publish, and stops with its context.
func TestRunReclaimsOnRelease(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		reclaims := make(chan platform.ReclaimEvent, 16)
		p := newBooted(t, platform.PublisherOptions{OnReclaim: func(ev platform.ReclaimEvent) { reclaims <- ev }})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()

		if _, err := p.Publish(ctx, 1, moduletest.Variant(0), 0); err != nil {
			t.Fatal(err)
		}
		_, release, _ := p.Store().Lease()
		if _, err := p.Publish(ctx, 2, moduletest.Variant(1), 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if gens := generations(t, p); !slices.Equal(gens, []int64{1, 2}) {
			t.Fatalf("with generation 1 leased, Generations() = %v, want [1 2]", gens)
		}
		time.Sleep(3 * time.Second) // the lease is held a while after it is superseded
		release()
		synctest.Wait()
		if gens := generations(t, p); !slices.Equal(gens, []int64{2}) {
			t.Fatalf("after the last lease on 1 was released, Generations() = %v, want [2]", gens)
		}
		ev := <-reclaims
		if ev.Identity.Key != 1 || ev.Err != nil || ev.Delay != 0 {
			t.Fatalf("reclaim event %+v, want generation 1 removed at once after its release", ev)
		}
		if st := p.Stats(); st.Reclaims != 1 || st.ReclaimDelay != 0 {
			t.Fatalf("stats %+v", st)
		}

		p.Forget()
		synctest.Wait()
		if gens := generations(t, p); len(gens) != 0 {
			t.Fatalf("after Forget with no lease, Generations() = %v, want none", gens)
		}

		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v after its context ended, want nil", err)
		}
	})
}

// A forgotten generation's directory goes when its last lease is released.
func TestForgetRemovesAfterLastLease(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p := newBooted(t, platform.PublisherOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go p.Run(ctx)
		if _, err := p.Publish(ctx, 1, moduletest.Variant(0), 0); err != nil {
			t.Fatal(err)
		}
		rec, release, _ := p.Store().Lease()
		p.Forget()
		if _, ok := p.Store().Generated(); ok {
			t.Fatal("the store holds a record after Forget")
		}
		if _, _, err := p.Render(ctx, renderInstance(t)); !errors.Is(err, platform.ErrNotReady) {
			t.Fatalf("Render after Forget: %v, want ErrNotReady", err)
		}
		synctest.Wait()
		checkTree(t, rec.Dir, moduletest.Variant(0))
		release()
		synctest.Wait()
		if gens := generations(t, p); len(gens) != 0 {
			t.Fatalf("after the forgotten generation's last release, Generations() = %v", gens)
		}
	})
}

// While Run runs, Publish hands it the superseded generation's removal,
// yet directories never pile up: after every Publish at most the one it
// superseded awaits removal, and Run removes it.
func TestRunTakesOverPruningWithoutPileUp(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p := newBooted(t, platform.PublisherOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()
		synctest.Wait()
		for gen := int64(1); gen <= 12; gen++ {
			if _, err := p.Publish(ctx, gen, moduletest.Variant(int(gen)%4), 0); err != nil {
				t.Fatal(err)
			}
			if gens := generations(t, p); len(gens) > 2 || gens[len(gens)-1] != gen {
				t.Fatalf("after publishing %d, Generations() = %v: more than the superseded one awaits removal", gen, gens)
			}
			if gen%3 == 0 {
				synctest.Wait()
				if gens := generations(t, p); !slices.Equal(gens, []int64{gen}) {
					t.Fatalf("after Run's pass, Generations() = %v, want [%d]", gens, gen)
				}
			}
		}
		cancel()
		<-ran
	})
}

// A Publish waiting for its turn behind another returns when its context
// ends, having changed nothing.
func TestPublishWaitingForItsTurnIsCancellable(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p, release, rewrite := heldTurn(t)

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := p.Publish(ctx, 2, moduletest.Variant(2), 0); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Publish behind a draining rewrite: %v, want context.DeadlineExceeded", err)
		}
		if g := generations(t, p); !slices.Equal(g, []int64{1}) {
			t.Fatalf("Generations() = %v, want [1]", g)
		}
		release()
		if r := <-rewrite; r.err != nil {
			t.Fatal(r.err)
		}
		if g := p.Store().Generation(); g != 1 {
			t.Fatalf("Generation() = %d", g)
		}
	})
}
