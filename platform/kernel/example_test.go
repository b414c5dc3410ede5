package kernel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// writeTemp writes files into a new temporary directory.
func writeTemp(files map[string][]byte) string {
	dir, err := os.MkdirTemp("", "kernel-example")
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	return dir
}

func ExampleKernel_BuildPlatform() {
	files, err := platformmodule.Generate(platformmodule.Input{
		Name: "acme",
		Catalogs: []platformmodule.Catalog{
			{Path: "example.com/catalogs/web@v1", Version: "v1.4.0", Kinds: []string{"Deployment", "Service"}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	dir := writeTemp(files)
	defer os.RemoveAll(dir)

	p, err := kernel.New().BuildPlatform(context.Background(), dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name, p.Type, p.Module)
	for _, c := range p.Catalogs {
		fmt.Println(c.Path, c.Version, c.Enabled, c.Kinds)
	}
	// Output:
	// acme standard platform.leasekit.dev/acme@v0
	// example.com/catalogs/web@v1 v1.4.0 true [Deployment Service]
}

func ExampleKernel_Render() {
	files, _ := platformmodule.Generate(platformmodule.Input{
		Name:     "acme",
		Labels:   map[string]string{"team": "platform"},
		Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@v1", Version: "v1.4.0", Kinds: []string{"Deployment"}}},
	})
	dir := writeTemp(files)
	defer os.RemoveAll(dir)
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		log.Fatal(err)
	}

	out, err := k.Render(context.Background(), kernel.RenderInput{
		Platform: p,
		Skew:     kernel.SkewWarn,
		Instance: kernel.Instance{Files: map[string][]byte{
			"cue.mod/module.cue": []byte(`module: "example.com/shop@v0", language: version: "v0.14.0"`),
			"shop.cue": []byte(`package shop
name: "shop"
requires: "example.com/catalogs/web@v1": "v1.5.0" // newer than the platform's
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1", replicas: 2, spec: image: "shop:1"}
`),
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out.Resources {
		md := r.Object["metadata"].(map[string]any)
		fmt.Println(r.Kind, r.Name, md["labels"].(map[string]any)["team"], r.Object["spec"])
	}
	for _, d := range out.Diagnostics {
		fmt.Println(d.Severity+":", d.Path, d.InstanceVersion, ">", d.PlatformVersion)
	}
	// Output:
	// Deployment shop-web platform map[image:shop:1 replicas:2]
	// warning: example.com/catalogs/web@v1 v1.5.0 > v1.4.0
}
