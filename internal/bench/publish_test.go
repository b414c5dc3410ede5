package bench

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// BenchmarkRepublishOneCatalog publishes the current generation of a
// one-catalog platform module again with identical files: recognised by
// a fingerprint, with no copy of the files kept (the platform's Publisher
// and the generic one it instantiates). The baseline writes and builds
// again.
func BenchmarkRepublishOneCatalog(b *testing.B) {
	files := platformFiles(b, 1)
	ctx := context.Background()
	measure(b, "",
		impl{"leasekit", func(b *testing.B) func() error {
			p := bootedPlatform(b, files)
			return func() error { _, err := p.Publish(ctx, 1, files, 0); return err }
		}},
		impl{"generic", func(b *testing.B) func() error {
			k := kernel.New()
			p := publish.New(filepath.Join(b.TempDir(), "platform"), dirlife.IntCodec[int64]{Prefix: "gen-"}, k.BuildPlatform,
				publish.Options[int64, *kernel.Platform, kernel.SkewPolicy]{})
			if err := p.Boot(); err != nil {
				b.Fatal(err)
			}
			if _, err := p.Publish(ctx, 1, files, 0); err != nil {
				b.Fatal(err)
			}
			return func() error { _, err := p.Publish(ctx, 1, files, 0); return err }
		}},
		impl{"baseline", func(b *testing.B) func() error {
			p := baselinePublisher(b)
			return func() error { _, err := p.Publish(ctx, 1, files, 0); return err }
		}},
	)
}

// BenchmarkChangeWhileLeased publishes a changed one-catalog module at the
// current generation while a render holds a lease on it for the given
// time, and a reader leases in a loop: the change is written beside the
// leased directory and swapped in, so its latency does not depend on the
// hold, and no lease is refused (refused/op, always 0). It reports the
// median latency of the iterations as median-ns/op; run it with
// -benchtime 5x for the median of five.
func BenchmarkChangeWhileLeased(b *testing.B) {
	variants := [2]dirlife.Files{platformFiles(b, 1), platformFiles(b, 1)}
	variants[1]["platform.cue"] = append(slices.Clone(variants[1]["platform.cue"]), "\n// changed\n"...)
	for _, hold := range []time.Duration{10 * time.Millisecond, time.Second} {
		b.Run("hold="+hold.String(), func(b *testing.B) {
			ctx := context.Background()
			p := bootedPlatform(b, variants[0])
			var refused atomic.Int64
			var stopped atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				for !stopped.Load() {
					_, release, ok := p.Store().Lease()
					if !ok {
						refused.Add(1)
					}
					release()
				}
			})
			var took []time.Duration
			i := 0
			for b.Loop() {
				_, release, _ := p.Store().Lease() // a render holds the current content
				wg.Go(func() { time.Sleep(hold); release() })
				i++
				start := time.Now()
				if _, err := p.Publish(ctx, 1, variants[i%2], 0); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			stopped.Store(true)
			wg.Wait()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "median-ns/op")
			b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
		})
	}
}
