package publish_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// TestReadersStress runs readers that hash their leased directory when they
// lease it and again before they release it, while a writer publishes
// changes at one key and new keys with the reclaim loop running: every
// hash must equal the record's digest (the directory holds exactly the
// files published, and nothing changed or removed it while leased), and no
// lease is refused after the first publish.
func TestReadersStress(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })

	files := func(key int64, i int) dirlife.Files {
		return dirlife.Files{
			"bundle.txt":      fmt.Appendf(nil, "key %d content %d", key, i),
			"static/a/b.json": fmt.Appendf(nil, `{"i": %d}`, i%3),
		}
	}
	if _, err := p.Publish(ctx, 1, files(1, 0), 0); err != nil {
		t.Fatal(err)
	}
	var refused, reads atomic.Int64
	var stopped atomic.Bool
	for range 4 {
		wg.Go(func() {
			for !stopped.Load() {
				l, ok := p.Slot().Lease()
				if !ok {
					refused.Add(1)
					continue
				}
				rec := l.Value()
				for _, when := range []string{"at lease", "at release"} {
					got, err := readTree(rec.Dir)
					if err != nil {
						t.Errorf("reading leased %s %s: %v", rec.Dir, when, err)
					} else if d := publish.DigestFiles(got); d != rec.Digest {
						t.Errorf("leased %s %s holds digest %v, want %v", rec.Dir, when, d, rec.Digest)
					}
				}
				l.Release()
				reads.Add(1)
			}
		})
	}
	key := int64(1)
	for i := 1; i <= 300; i++ {
		if i%10 == 0 {
			key++ // a new key now and then; mostly changes at the current one
		}
		if _, err := p.Publish(ctx, key, files(key, i), 0); err != nil {
			t.Fatal(err)
		}
	}
	stopped.Store(true)
	cancel()
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d leases refused after the first publish", n)
	}
	for _, ev := range p.Reclaim() {
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
	}
	_, cur, _ := p.Slot().Get()
	if got := onDisk(t, root); len(got) != 1 || got[0] != filepath.Base(cur.Dir) {
		t.Fatalf("after the readers stopped, Root holds %v, want only %s", got, filepath.Base(cur.Dir))
	}
	t.Logf("%d leased reads", reads.Load())
}
