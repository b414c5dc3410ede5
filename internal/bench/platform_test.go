package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"leasekit.dev/internal/baseline"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

func storeRecord() platform.Generated {
	return platform.Generated{Generation: 7, Dir: "/var/lib/op/gen-7", Platform: &kernel.Platform{Name: "acme"}}
}

// storeImpls are the stores the lease benchmarks measure, each holding
// storeRecord: each op leases the current record and releases it.
var storeImpls = []impl{
	{"leasekit", func(*testing.B) func() error {
		var s platform.Store
		s.SetGenerated(storeRecord())
		return func() error {
			_, release, _ := s.Lease()
			release()
			return nil
		}
	}},
	{"baseline", func(*testing.B) func() error {
		var s baseline.Store[int64, platform.Generated]
		s.Set(7, storeRecord())
		return func() error {
			_, _, release, _ := s.Lease()
			release()
			return nil
		}
	}},
}

func BenchmarkStoreLeaseRelease(b *testing.B) { measure(b, "", storeImpls...) }

func BenchmarkStoreLeaseReleaseParallel(b *testing.B) { measureParallel(b, storeImpls...) }

// bootedPlatform returns a platform Publisher booted on a fresh Root, with
// files published as generation 1.
func bootedPlatform(b *testing.B, files platformmodule.Files) *platform.Publisher {
	b.Helper()
	p := platform.NewPublisher(filepath.Join(b.TempDir(), "platform"), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		b.Fatal(err)
	}
	if _, err := p.Publish(context.Background(), 1, files, 0); err != nil {
		b.Fatal(err)
	}
	return p
}

// baselinePublisher returns the baseline's Publisher on a fresh, reset
// Root.
func baselinePublisher(b *testing.B) *baseline.Publisher {
	b.Helper()
	p := &baseline.Publisher{Layout: platform.Layout{Root: filepath.Join(b.TempDir(), "platform")}, Kernel: kernel.New()}
	if err := p.Layout.Reset(); err != nil {
		b.Fatal(err)
	}
	return p
}

// platformFiles is a generated platform module with n catalogs.
func platformFiles(b *testing.B, n int) platformmodule.Files {
	in := platformmodule.Input{Name: "acme"}
	for i := range n {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{
			Path:    fmt.Sprintf("example.com/catalogs/c%02d@v1", i),
			Version: fmt.Sprintf("v1.%d.0", i),
			Kinds:   []string{"Deployment", "Service"},
		})
	}
	files, err := platformmodule.Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	return files
}

// BenchmarkPublish publishes a 20-catalog platform as a new generation,
// durably, each iteration superseding (and pruning) the previous one, so
// that Root holds one generation throughout. The Publisher's prunes defer
// the removal of the pruned tree; the baseline removes it inline, as a
// plain Layout does. The leasekit sub-benchmarks report the split of their
// time by step; with Run running, the prune itself moves off Publish's
// path too (prune-ns/op shows the latency saved).
func BenchmarkPublish(b *testing.B) {
	files := platformFiles(b, 20)
	ctx := context.Background()
	for _, run := range []bool{false, true} {
		name := "impl=leasekit"
		if run {
			name = "impl=leasekit-run" // Run takes the removal off Publish
		}
		b.Run(name, func(b *testing.B) {
			var sum publish.Timings
			p := platform.NewPublisher(filepath.Join(b.TempDir(), "platform"), platform.PublisherOptions{
				OnPublish: func(ev platform.PublishEvent) {
					sum.Write += ev.Timings.Write
					sum.Build += ev.Timings.Build
					sum.Set += ev.Timings.Set
					sum.Prune += ev.Timings.Prune
				},
			})
			if err := p.Boot(); err != nil {
				b.Fatal(err)
			}
			if run {
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { p.Run(ctx); close(done) }()
				defer func() { cancel(); <-done }()
			}
			gen := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				gen++
				if _, err := p.Publish(ctx, gen, files, 0); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(gen)
			for name, d := range map[string]time.Duration{"write": sum.Write, "build": sum.Build, "set": sum.Set, "prune": sum.Prune} {
				b.ReportMetric(float64(d.Nanoseconds())/n, name+"-ns/op")
			}
		})
	}
	measure(b, "", impl{"baseline", func(b *testing.B) func() error {
		p := baselinePublisher(b)
		gen := int64(0)
		return func() error {
			gen++
			_, err := p.Publish(ctx, gen, files, 0)
			return err
		}
	}})
}

// BenchmarkRepublish publishes the current generation again with
// byte-identical files: the re-reconcile of an unchanged resource. The
// baseline writes and builds again.
func BenchmarkRepublish(b *testing.B) {
	files := platformFiles(b, 20)
	ctx := context.Background()
	measure(b, "",
		impl{"leasekit", func(b *testing.B) func() error {
			p := bootedPlatform(b, files)
			return func() error { _, err := p.Publish(ctx, 1, files, 0); return err }
		}},
		impl{"baseline", func(b *testing.B) func() error {
			p := baselinePublisher(b)
			return func() error { _, err := p.Publish(ctx, 1, files, 0); return err }
		}},
	)
}
