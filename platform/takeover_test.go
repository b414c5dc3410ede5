package platform_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"testing/synctest"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
)

// A changed current generation whose file names the layout refuses is
// refused before anything is given up: its leases are not drained, new
// leases go on being granted, and its directory is not rewritten.
func TestRewriteWithRefusedNameDrainsNothing(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	rec, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := moduletest.Variant(1)
	bad["../escape.cue"] = []byte("package x\n")
	refused := func(t *testing.T, pctx context.Context) {
		t.Helper()
		_, err := p.Publish(pctx, 1, bad, 0)
		var ne *dirlife.NameError
		if !errors.As(err, &ne) || ne.Name != "../escape.cue" {
			t.Fatalf("rewrite with an escaping file name: %v, want a NameError naming it", err)
		}
		if got, ok := p.Store().Generated(); !ok || got != rec {
			t.Fatalf("after the refusal the store holds %+v, %v; want %+v", got, ok, rec)
		}
		after, err := os.Stat(rec.Dir)
		if err != nil || !os.SameFile(before, after) {
			t.Fatalf("the refusal replaced the directory of generation 1 (%v)", err)
		}
		checkTree(t, rec.Dir, moduletest.Variant(0))
		if st := p.Stats(); st.Publishes != 1 {
			t.Fatalf("Stats().Publishes = %d after a refusal, want 1", st.Publishes)
		}
	}
	t.Run("unleased", func(t *testing.T) { refused(t, ctx) })
	t.Run("leased", func(t *testing.T) {
		_, release, _ := p.Store().Lease()
		defer release()
		// A refusal that drained first would wait for this lease and
		// report the context's end instead.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		refused(t, cctx)
		if l := p.Store().Leased(); !slices.Equal(l, []int64{1}) {
			t.Fatalf("Leased() = %v, want [1]", l)
		}
	})
}

// Run stops with its context also while it waits for its turn behind a
// Publish that holds it.
func TestRunStopsWhileWaitingForItsTurn(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p, release, rewrite := heldTurn(t)

		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error, 1)
		go func() { stopped <- p.Run(ctx) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("Run = %v, want nil when its context ends", err)
			}
		default:
			t.Fatal("Run did not stop with its context while a Publish held the turn")
		}
		release()
		if r := <-rewrite; r.err != nil {
			t.Fatal(r.err)
		}
	})
}

// Once booted, Boot and Start return at once (Start with its context),
// also while a Publish holds the turn draining leases.
func TestBootAgainDoesNotWaitForADrain(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p, release, rewrite := heldTurn(t)

		booted := make(chan error, 1)
		go func() { booted <- p.Boot() }()
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan error, 1)
		go func() { started <- p.Start(ctx) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		for name, ch := range map[string]chan error{"Boot": booted, "Start": started} {
			select {
			case err := <-ch:
				if err != nil {
					t.Fatalf("%s of a booted Publisher = %v", name, err)
				}
			default:
				t.Errorf("%s of a booted Publisher waited for a Publish draining leases", name)
			}
		}
		release()
		if r := <-rewrite; r.err != nil {
			t.Fatal(r.err)
		}
		for _, ch := range []chan error{booted, started} {
			select {
			case <-ch:
			default:
			}
		}
	})
}
