package kernel_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"leasekit.dev/internal/testkit/depth"
	"leasekit.dev/platform/kernel"
)

// TestConcurrentBuildAndRender: 16 goroutines build and render at once on
// one Kernel, with no lock of the caller's; every result equals the one a
// lone call gives.
func TestConcurrentBuildAndRender(t *testing.T) {
	k := kernel.New()
	dir := generated(t, acme)
	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	in := shop(p, "v1.9.0", 10)
	want, err := k.Render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)

	const goroutines, rounds = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds*2)
	for g := range goroutines {
		wg.Go(func() {
			for range rounds {
				if g%2 == 0 {
					q, err := k.BuildPlatform(context.Background(), dir)
					if err != nil {
						errs <- err
						continue
					}
					if q.Name != p.Name || len(q.Catalogs) != len(p.Catalogs) {
						t.Errorf("concurrent build returned %+v", q)
					}
				}
				out, err := k.Render(context.Background(), in)
				if err != nil {
					errs <- err
					continue
				}
				if got, _ := json.Marshal(out); string(got) != string(wantJSON) {
					t.Errorf("concurrent render differs:\n%s\nwant\n%s", got, wantJSON)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// renderRetainsLimit is how many bytes of heap each render of
// TestRenderRetainsNothing may leave behind: a render that kept its
// cue.Context, or anything evaluated in it, would leave far more.
const renderRetainsLimit = 2 << 10

// TestRenderRetainsNothing renders 2,000 times at rapid's default depth
// or more (-rapid.checks=100; 400 times below it, as in the README's run
// of 20 cases) and checks that the heap, after garbage collection, has
// grown by less than renderRetainsLimit for each render, 4 MiB over
// 2,000: no call keeps a cue.Context or anything evaluated in it. The
// bound scales with the count, so a render that leaks fails at either.
func TestRenderRetainsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of renders")
	}
	n := 400
	if depth.AtLeast(100) {
		n = 2000
	}
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), generated(t, acme))
	if err != nil {
		t.Fatal(err)
	}
	in := shop(p, "v1.0.0", 4)
	render := func(n int) {
		for range n {
			if _, err := k.Render(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}
	}
	render(50) // warm up: lazily built tables, caches of the runtime
	before := heapAfterGC()
	render(n)
	after := heapAfterGC()
	growth := int64(after) - int64(before)
	t.Logf("heap after %d renders: %d bytes before, %d after (%+d)", n, before, after, growth)
	if limit := int64(n) * renderRetainsLimit; growth > limit {
		t.Fatalf("heap grew by %d bytes over %d renders, want under %d (%d bytes a render)", growth, n, limit, renderRetainsLimit)
	}
}
