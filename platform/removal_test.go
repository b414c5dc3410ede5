package platform_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/platformmodule"
)

// bulky is moduleFiles(v) with n more files: a module whose removal takes
// a while.
func bulky(t tb, v, n int) platformmodule.Files {
	t.Helper()
	files := moduleFiles(t, v)
	for i := range n {
		files[fmt.Sprintf("data/d%02d/f%05d.txt", i%50, i)] = nil
	}
	return files
}

// TestStrayFileNamedLikeGenerationNeverCostsTheCurrent: a stray file in
// Root named like a generation that is published next is garbage, never
// a name under which the generation's directory is later removed: the
// current, leased generation's directory stays and renders.
func TestStrayFileNamedLikeGenerationNeverCostsTheCurrent(t *testing.T) {
	warmKernel(t)
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	root := p.Layout().Root
	if _, err := p.Publish(ctx, 1, bulky(t, 0, 5_000), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 2, moduleFiles(t, 1), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "gen-4"), []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 3, moduleFiles(t, 2), 0); err != nil {
		t.Fatal(err)
	}
	want := moduleFiles(t, 3)
	if _, err := p.Publish(ctx, 4, want, 0); err != nil {
		t.Fatal(err)
	}
	rec, release, ok := p.Store().Lease()
	if !ok || rec.Generation != 4 {
		t.Fatalf("Lease() = %d, %v, want generation 4", rec.Generation, ok)
	}
	defer release()
	if err := (platform.Layout{Root: root}).Settle(); err != nil {
		t.Fatal(err)
	}
	checkTree(t, rec.Dir, want)
	if _, _, err := p.Render(ctx, renderInstance(t)); err != nil {
		t.Fatalf("Render after the stray file: %v", err)
	}
}

// TestStuckRemovalBlocksNothing: a removal that never returns (the wait
// for the layout's background removals blocks, as it does on a mount that
// stops answering) blocks no Publish, Forget, lease, render or reclaim of
// another generation; it is reported, in Stats and to OnReclaim, once
// RemovalDeadline has passed, and again at each retry; and Run returns
// once its ctx ends, without waiting for it.
func TestStuckRemovalBlocksNothing(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		const deadline = 30 * time.Second
		var mu sync.Mutex
		var stalls []int64 // generations reported stuck
		p := newBooted(t, platform.PublisherOptions{
			RemovalDeadline: deadline, RetryMin: time.Second, RetryMax: time.Second,
			OnReclaim: func(ev platform.ReclaimEvent) {
				if errors.Is(ev.Err, dirlife.ErrRemovalStalled) {
					mu.Lock()
					stalls = append(stalls, ev.Identity.Key)
					mu.Unlock()
				}
			},
		})
		root := p.Layout().Root
		// gen-1's removal hangs: the wait for it returns only at the
		// deadline, naming it, or when ctx ends.
		var stuck atomic.Bool
		unstick := make(chan struct{})
		real := p.Layout().Settle
		p.SetSettle(func(ctx context.Context) error {
			if !stuck.Load() {
				return real()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-unstick:
				return real()
			case <-time.After(deadline):
				return &dirlife.StalledError{Root: root, Deadline: deadline, Entries: []dirlife.StalledEntry{{Name: "gen-1", Aside: ".aside-8000000000000001"}}}
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()

		if _, err := p.Publish(ctx, 1, moduleFiles(t, 0), 0); err != nil {
			t.Fatal(err)
		}
		stuck.Store(true)
		if _, err := p.Publish(ctx, 2, moduleFiles(t, 1), 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // Run pruned gen-1 and waits for its removal
		start := time.Now()

		// Everything else goes on, with no time passing.
		rec, release, ok := p.Store().Lease()
		if !ok || rec.Generation != 2 {
			t.Fatalf("Lease() = %d, %v, want generation 2", rec.Generation, ok)
		}
		if _, err := p.Publish(ctx, 3, moduleFiles(t, 2), 0); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.Render(ctx, renderInstance(t)); err != nil {
			t.Fatal(err)
		}
		release() // gen-2's last lease: Run reclaims it
		synctest.Wait()
		if gens := generations(t, p); !slices.Equal(gens, []int64{3}) {
			t.Fatalf("Generations() = %v while gen-1's removal hangs, want [3]", gens)
		}
		p.Forget()
		if gens := generations(t, p); len(gens) != 0 {
			t.Fatalf("Generations() = %v after Forget, want none", gens)
		}
		if _, err := p.Publish(ctx, 4, moduleFiles(t, 3), 0); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("the calls took %v of fake time while a removal hung, want none", time.Since(start))
		}
		if st := p.Stats(); st.StalledRemovals != 0 {
			t.Fatalf("Stats().StalledRemovals = %d before the deadline, want 0", st.StalledRemovals)
		}

		time.Sleep(deadline)
		synctest.Wait()
		st := p.Stats()
		if st.StalledRemovals != 1 || !errors.Is(st.LastError, dirlife.ErrRemovalStalled) || !strings.Contains(st.LastError.Error(), "gen-1") {
			t.Fatalf("after the deadline, Stats() = %d stalled, LastError %v; want 1, naming gen-1", st.StalledRemovals, st.LastError)
		}
		mu.Lock()
		got := slices.Clone(stalls)
		mu.Unlock()
		if !slices.Equal(got, []int64{1}) {
			t.Fatalf("OnReclaim saw stalls of %v, want [1]", got)
		}
		time.Sleep(time.Second + deadline) // the retry, and its deadline
		synctest.Wait()
		mu.Lock()
		n := len(stalls)
		mu.Unlock()
		if n < 2 {
			t.Fatalf("OnReclaim saw %d stalls after a retry, want at least 2", n)
		}

		// Run returns at once when its ctx ends, the removal still stuck.
		cancel()
		synctest.Wait()
		select {
		case err := <-ran:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Run did not return once its ctx ended while a removal hung")
		}

		// Once the removal returns, the next Run reports nothing stuck.
		close(unstick)
		stuck.Store(false)
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() { ran <- p.Run(ctx2) }()
		synctest.Wait()
		if st := p.Stats(); st.StalledRemovals != 0 {
			t.Fatalf("Stats().StalledRemovals = %d once the removal returned, want 0", st.StalledRemovals)
		}
		cancel2()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}
