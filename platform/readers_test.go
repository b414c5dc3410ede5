package platform_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
)

// TestConcurrentReadersSeeStableDirectories: readers lease, read the whole
// directory, wait, read it again and compare byte for byte, while a
// publisher publishes new generations and changes the current one as fast
// as it can and the reclaim loop removes what is released. Every read must
// be a complete variant that matches the leased record, and both reads
// must agree.
func TestConcurrentReadersSeeStableDirectories(t *testing.T) {
	const (
		readers     = 4
		minReads    = 300
		minPublish  = 30
		minRewrites = 10
	)
	p := newBooted(t, platform.PublisherOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx) })

	variants := make([]map[string][]byte, 4)
	for v := range variants {
		variants[v] = moduletest.Variant(v)
	}
	variantOf := func(files map[string][]byte) int {
		for v, want := range variants {
			if sameFiles(files, want) {
				return v
			}
		}
		return -1
	}

	var reads, publishes, rewrites atomic.Int64
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	for range readers {
		wg.Go(func() {
			for ctx.Err() == nil {
				rec, release, ok := p.Store().Lease()
				if !ok {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				first := readTreeErr(rec.Dir)
				time.Sleep(200 * time.Microsecond)
				second := readTreeErr(rec.Dir)
				release()
				v := variantOf(first)
				switch {
				case v < 0:
					fail("generation %d: read an incomplete or unknown directory (%d files)", rec.Generation, len(first))
				case !sameFiles(first, second):
					fail("generation %d changed while leased", rec.Generation)
				case rec.Platform.Catalogs[len(rec.Platform.Catalogs)-1].Version != fmt.Sprintf("v1.%d.0", v):
					fail("generation %d: the record's platform %v does not match its directory (variant %d)", rec.Generation, rec.Platform.Catalogs, v)
				}
				reads.Add(1)
			}
		})
	}

	gen := int64(1)
	for i := 0; reads.Load() < minReads || publishes.Load() < minPublish || rewrites.Load() < minRewrites; i++ {
		if failures.Load() > 0 {
			break
		}
		if i%3 == 2 {
			// Change the current generation's files: waits for its leases.
			if _, err := p.Publish(ctx, gen, variants[i%4], 0); err != nil {
				t.Fatalf("rewrite of %d: %v", gen, err)
			}
			rewrites.Add(1)
		} else {
			gen++
			if _, err := p.Publish(ctx, gen, variants[i%4], 0); err != nil {
				t.Fatalf("publish of %d: %v", gen, err)
			}
		}
		publishes.Add(1)
	}
	cancel()
	wg.Wait()
	if r := reads.Load(); r < minReads {
		t.Fatalf("only %d reads were checked, want at least %d", r, minReads)
	}
	t.Logf("%d reads checked across %d publishes (%d rewrites)", reads.Load(), publishes.Load(), rewrites.Load())
	if st := p.Stats(); len(leased(st)) != 0 {
		t.Fatalf("leases left: %v", leased(st))
	}
	p.ReclaimNow()
	if g := generations(t, p); len(g) != 1 || g[0] != gen {
		t.Fatalf("after the readers stopped, Generations() = %v, want [%d]", g, gen)
	}
}

// readTreeErr reads a directory as readTree does, returning what it could
// read: a missing directory reads as empty, which no variant is.
func readTreeErr(dir string) map[string][]byte {
	var files map[string][]byte
	func() {
		defer func() { _ = recover() }()
		files = readTree(panicTB{}, dir)
	}()
	return files
}

// panicTB turns a helper's Fatal into a panic, for use off the test's
// goroutine.
type panicTB struct{}

func (panicTB) Helper()                      {}
func (panicTB) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
