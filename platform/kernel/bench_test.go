package kernel_test

import (
	"context"
	"fmt"
	"testing"

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

// BenchmarkRender10 renders a 10-component instance.
func BenchmarkRender10(b *testing.B) {
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), generated(b, acme))
	if err != nil {
		b.Fatal(err)
	}
	in := kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"
requires: "` + webPath + `": "v1.0.0"
` + components(10))}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Render(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
