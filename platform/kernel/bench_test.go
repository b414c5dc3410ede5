package kernel_test

import (
	"context"
	"fmt"
	"testing"

	"leasekit.dev/internal/testkit/cputime"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// BenchmarkBuildPlatform20 builds a 20-catalog platform.
func BenchmarkBuildPlatform20(b *testing.B) {
	in := platformmodule.Input{Name: "bench", Labels: map[string]string{"team": "platform"}}
	for i := range 20 {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{
			Path: fmt.Sprintf("example.com/catalogs/c%02d@v1", i), Version: fmt.Sprintf("v1.%d.0", i),
			Kinds: []string{"Deployment", "Service", "CronJob"},
		})
	}
	dir := generated(b, in)
	k := kernel.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.BuildPlatform(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender renders instances of 0 to 20 components: its
// components=10 case is the one the kernel's target is set for, and the
// others show what a render costs before its first component and for each
// further one.
func BenchmarkRender(b *testing.B) {
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), generated(b, acme))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{0, 1, 10, 20} {
		in := shop(p, "v1.0.0", n)
		b.Run(fmt.Sprintf("components=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.Render(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRenderPaths renders an instance of 10 components, as a Dir and
// as Files, by Render (path=fast) and by each fast path's slow twin: the
// instance read as the loader reads it, not whole (path=loader-reads),
// and the resources evaluated under #Render, not assembled in Go
// (path=evaluated), with the process's CPU time per render (cpu-ns/op),
// which a loaded machine sways less than the wall clock. A fast path
// stays while its ratio to its twin earns it.
func BenchmarkRenderPaths(b *testing.B) {
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), generated(b, acme))
	if err != nil {
		b.Fatal(err)
	}
	files := shop(p, "v1.0.0", 10).Instance.Files
	dir := b.TempDir()
	for name, data := range files {
		kernel.WriteFiles(b, dir, map[string]string{name: string(data)})
	}
	for _, inst := range []struct {
		form string
		in   kernel.Instance
	}{{"dir", kernel.Instance{Dir: dir}}, {"files", kernel.Instance{Files: files}}} {
		in := kernel.RenderInput{Platform: p, Instance: inst.in}
		for _, path := range []struct {
			name                   string
			loaderReads, evaluated bool
		}{{"fast", false, false}, {"loader-reads", true, false}, {"evaluated", false, true}} {
			b.Run(fmt.Sprintf("components=10/instance=%s/path=%s", inst.form, path.name), func(b *testing.B) {
				b.ReportAllocs()
				start, _ := cputime.Process()
				for b.Loop() {
					if _, err := k.RenderSlowly(context.Background(), in, path.loaderReads, path.evaluated); err != nil {
						b.Fatal(err)
					}
				}
				if end, ok := cputime.Process(); ok {
					b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}
