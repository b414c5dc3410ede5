package kernel_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"testing"

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

// TestRenderRetainsNothing renders 2,000 times and checks that the heap,
// after garbage collection, has grown by less than 4 MiB: no call keeps a
// cue.Context or anything evaluated in it.
func TestRenderRetainsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 renders")
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
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	render(50) // warm up: lazily built tables, caches of the runtime
	before := heap()
	render(2000)
	after := heap()
	growth := int64(after) - int64(before)
	t.Logf("heap after 2,000 renders: %d bytes before, %d after (%+d)", before, after, growth)
	if growth > 4<<20 {
		t.Fatalf("heap grew by %d bytes over 2,000 renders, want under 4 MiB", growth)
	}
}
