package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// BenchmarkPublisherRender renders an instance of 10 components against
// the 20-catalog platform, three ways side by side: a memo hit of the
// Publisher's Render (impl=memo-hit); a fresh kernel render of the same
// input, which reads and hashes the platform's directory again
// (impl=kernel); and the output's Clone, the copy that a hit hands out
// (impl=copy), whose allocations the hit's include.
// The instance is given as Files (as a controller renders an object's)
// and as a Dir.
func BenchmarkPublisherRender(b *testing.B) {
	ctx := context.Background()
	const n = 10
	for _, form := range []string{"files", "dir"} {
		files := shopFiles(n, false)
		inst := kernel.Instance{Files: files}
		if form == "dir" {
			inst = kernel.Instance{Dir: writeDir(b, files)}
		}
		pub := platform.NewPublisher(filepath.Join(b.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
		if err := pub.Boot(); err != nil {
			b.Fatal(err)
		}
		rec, err := pub.Publish(ctx, 1, platform20Files(b), kernel.SkewWarn)
		if err != nil {
			b.Fatal(err)
		}
		want, _, err := pub.Render(ctx, inst) // the miss that fills the memo
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("components=%d/instance=%s/impl=memo-hit", n, form), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := pub.Render(ctx, inst); err != nil {
					b.Fatal(err)
				}
			}
			if st := pub.Stats().Memo; st.Hits == 0 {
				b.Fatalf("no hit: %+v", st)
			}
		})
		b.Run(fmt.Sprintf("components=%d/instance=%s/impl=kernel", n, form), func(b *testing.B) {
			k := kernel.New()
			in := kernel.RenderInput{Platform: rec.Platform, Instance: inst, Skew: rec.Skew}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Render(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("components=%d/instance=%s/impl=copy", n, form), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = want.Clone()
			}
		})
	}
}

// BenchmarkPublisherRenderAcrossGenerations renders an instance of 10
// components (catalogs c00 to c09) against two generations of the
// 20-catalog platform that differ only in c19, which it does not use, both
// leased: each render alternates between them and hits the one entry the
// first generation's render left (impl=memo-hit-across), beside a fresh
// kernel render against the second generation (impl=kernel).
func BenchmarkPublisherRenderAcrossGenerations(b *testing.B) {
	ctx := context.Background()
	const n = 10
	inst := kernel.Instance{Files: shopFiles(n, false)}
	pub := platform.NewPublisher(filepath.Join(b.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	if err := pub.Boot(); err != nil {
		b.Fatal(err)
	}
	var recs []platform.Generated
	for gen, c19 := range []string{"v1.19.0", "v1.19.1"} {
		in := platformmodule.Input{Name: "bench", Labels: map[string]string{"team": "platform"}}
		for i := range 20 {
			v := fmt.Sprintf("%s1.%d.0", []string{"v", ""}[i%2], i)
			if i == 19 {
				v = c19
			}
			in.Catalogs = append(in.Catalogs, platformmodule.Catalog{Path: catalogPath(i), Version: v, Kinds: []string{"Deployment", "Service", "CronJob"}})
		}
		files, err := platformmodule.Generate(in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pub.Publish(ctx, int64(gen+1), files, kernel.SkewWarn); err != nil {
			b.Fatal(err)
		}
		rec, release, _ := pub.Store().Lease()
		b.Cleanup(release)
		if _, _, err := pub.RenderLeased(ctx, rec, inst); err != nil {
			b.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if st := pub.Stats().Memo; st.Hits != 1 || st.Misses != 1 {
		b.Fatalf("the second generation's render did not hit: %+v", st)
	}
	b.Run(fmt.Sprintf("components=%d/instance=files/impl=memo-hit-across", n), func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := pub.RenderLeased(ctx, recs[i%2], inst); err != nil {
				b.Fatal(err)
			}
			i++
		}
		if st := pub.Stats().Memo; st.Misses != 1 {
			b.Fatalf("a render missed: %+v", st)
		}
	})
	b.Run(fmt.Sprintf("components=%d/instance=files/impl=kernel", n), func(b *testing.B) {
		k := kernel.New()
		in := kernel.RenderInput{Platform: recs[1].Platform, Instance: inst, Skew: recs[1].Skew}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Render(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRenderDependencies computes what a render of an instance of 10
// components reads of the 20-catalog platform, beside the render: from
// its files, parsed (impl=reads+dependencies); from reads already known,
// as the Publisher does for a content it has seen (impl=dependencies);
// the whole key of a Publisher, the instance's digest included
// (impl=key); and a fresh kernel render (impl=kernel).
func BenchmarkRenderDependencies(b *testing.B) {
	ctx := context.Background()
	const n = 10
	files := shopFiles(n, false)
	inst := kernel.Instance{Files: files}
	pub := platform.NewPublisher(filepath.Join(b.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	if err := pub.Boot(); err != nil {
		b.Fatal(err)
	}
	rec, err := pub.Publish(ctx, 1, platform20Files(b), kernel.SkewWarn)
	if err != nil {
		b.Fatal(err)
	}
	if paths, known := kernel.ReadsOf(files).Catalogs(); !known || len(paths) != n {
		b.Fatalf("ReadsOf: %v, known %v", paths, known)
	}
	b.Run(fmt.Sprintf("components=%d/impl=reads+dependencies", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = kernel.ReadsOf(files).Dependencies(rec.Platform, rec.Skew)
		}
	})
	b.Run(fmt.Sprintf("components=%d/impl=dependencies", n), func(b *testing.B) {
		reads := kernel.ReadsOf(files)
		b.ReportAllocs()
		for b.Loop() {
			_ = reads.Dependencies(rec.Platform, rec.Skew)
		}
	})
	b.Run(fmt.Sprintf("components=%d/impl=key", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := pub.Key(ctx, rec, inst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("components=%d/impl=kernel", n), func(b *testing.B) {
		k := kernel.New()
		in := kernel.RenderInput{Platform: rec.Platform, Instance: inst, Skew: rec.Skew}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Render(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
