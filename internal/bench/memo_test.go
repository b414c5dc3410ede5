package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
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
