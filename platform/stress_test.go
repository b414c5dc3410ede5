package platform_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/publish"
)

// Publish, Forget, Boot, Render, Stats, leases and the reclaim loop all at
// once: every leased directory holds the files of the record leased until
// it is released, every call returns one of its documented errors, and
// once everything stops and is released, a reclaim leaves Root holding the
// current generation only.
func TestEverythingAtOnce(t *testing.T) {
	const rounds = 60
	p := newBooted(t, platform.PublisherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	variants := [4]map[string][]byte{}
	for v := range variants {
		variants[v] = moduletest.Variant(v)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })

	var next atomic.Int64
	var checked atomic.Int64
	fail := make(chan string, 8)
	report := func(msg string) {
		select {
		case fail <- msg:
		default:
		}
	}
	var writers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for i := range rounds {
				switch (i + w) % 5 {
				case 0, 1: // a new generation
					gen := next.Add(1)
					_, err := p.Publish(ctx, gen, variants[i%4], 0)
					var se *publish.StaleError[int64]
					if err != nil && !errors.As(err, &se) {
						report("publish new: " + err.Error())
					}
				case 2: // the current generation, maybe changed
					gen := p.Store().Generation()
					if gen == 0 {
						continue
					}
					_, err := p.Publish(ctx, gen, variants[(i+w)%4], 0)
					var se *publish.StaleError[int64]
					if err != nil && !errors.As(err, &se) {
						report("publish current: " + err.Error())
					}
				case 3:
					if i%10 == 3 {
						p.Forget()
					}
					if err := p.Boot(); err != nil {
						report("boot again: " + err.Error())
					}
				case 4:
					_, _, err := p.Render(ctx, renderInstance(t))
					// Every variant carries the web catalog the instance
					// needs, at its version or newer.
					if err != nil && !errors.Is(err, platform.ErrNotReady) {
						report("render: " + err.Error())
					}
					_ = p.Stats()
				}
			}
		})
	}
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				rec, release, ok := p.Store().Lease()
				if !ok {
					continue
				}
				first := readTreeErr(rec.Dir)
				second := readTreeErr(rec.Dir)
				if len(first) == 0 || !sameFiles(first, second) {
					report("a leased directory changed or vanished")
				}
				release()
				release()
				checked.Add(1)
			}
		})
	}
	writers.Wait()
	cancel()
	wg.Wait()
	close(fail)
	for msg := range fail {
		t.Error(msg)
	}
	if checked.Load() == 0 {
		t.Fatal("no lease was checked")
	}
	if l := p.Store().Leased(); len(l) != 0 {
		t.Fatalf("Leased() = %v after every lease was released", l)
	}
	for _, ev := range p.ReclaimNow() {
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	want := []int64{}
	if g := p.Store().Generation(); g != 0 {
		want = []int64{g}
	}
	if got := generations(t, p); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("after everything stopped, Generations() = %v, want %v", got, want)
	}
	if got := strayEntries(t, p.Layout().Root); len(got) != 0 {
		t.Fatalf("after everything stopped, Root holds %v", got)
	}
}

// Renders racing changes of the current generation are never refused:
// each change is swapped in, so a record is held at every instant.
func TestRendersNeverRefusedDuringChanges(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := p.Publish(ctx, 1, moduletest.Variant(0), 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })
	var refused, renders atomic.Int64
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _, err := p.Render(ctx, renderInstance(t))
				switch {
				case errors.Is(err, platform.ErrNotReady):
					refused.Add(1)
				case err != nil && ctx.Err() == nil:
					t.Errorf("render: %v", err)
				}
				renders.Add(1)
			}
		})
	}
	for i := 1; i <= 20; i++ {
		if _, err := p.Publish(ctx, 1, moduletest.Variant(i%4), 0); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d of %d renders refused with ErrNotReady during changes of generation 1", n, renders.Load())
	}
	if st := p.Stats(); st.Changes == 0 {
		t.Fatalf("no change was published: %+v", st)
	}
}
