package kernel_test

import (
	"context"
	"errors"
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

// buildTemp writes files into a new temporary directory, for the caller to
// remove, and builds the platform there with k.
func buildTemp(k *kernel.Kernel, files map[string][]byte) (*kernel.Platform, string) {
	dir := writeTemp(files)
	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		log.Fatal(err)
	}
	return p, dir
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
	k := kernel.New()
	p, dir := buildTemp(k, files)
	defer os.RemoveAll(dir)

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

// A platform is bound to the content it was built from: once its
// directory changes, a render against it is refused until it is built
// again.
func ExampleContentError() {
	files, _ := platformmodule.Generate(platformmodule.Input{
		Name:     "acme",
		Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@v1", Version: "v1.4.0", Kinds: []string{"Deployment"}}},
	})
	k := kernel.New()
	p, dir := buildTemp(k, files)
	defer os.RemoveAll(dir)
	in := kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte(`module: "example.com/shop@v0", language: version: "v0.14.0"`),
		"shop.cue":           []byte("package shop\nname: \"shop\"\n"),
	}}}

	// Another file in the platform's directory.
	os.WriteFile(filepath.Join(dir, "extra.cue"), []byte("package platform\nlabels: extra: \"x\"\n"), 0o644)
	_, err := k.Render(context.Background(), in)
	var ce *kernel.ContentError
	fmt.Println(errors.As(err, &ce), ce.Want == p.Digest)

	// Built again, the platform renders.
	if p, err = k.BuildPlatform(context.Background(), dir); err != nil {
		log.Fatal(err)
	}
	in.Platform = p
	_, err = k.Render(context.Background(), in)
	fmt.Println(err)
	// Output:
	// true true
	// <nil>
}

// Limits bound what a build reads before it parses it: here, a platform
// file nested deeper than a Kernel allows.
func ExampleLimits() {
	dir := writeTemp(map[string][]byte{
		"cue.mod/module.cue": []byte(`module: "platform.leasekit.dev/acme@v0", language: version: "v0.14.0"`),
		"platform.cue":       []byte("package platform\nname: \"acme\"\n_deep: [[[[[[1]]]]]]\n"),
	})
	defer os.RemoveAll(dir)
	k := &kernel.Kernel{Limits: kernel.Limits{MaxDepth: 5}}
	_, err := k.BuildPlatform(context.Background(), dir)
	var le *kernel.LimitError
	if errors.As(err, &le) {
		fmt.Println(le.Limit, filepath.Base(le.File), le.Value, le.Max)
	}
	// Output:
	// MaxDepth platform.cue 6 5
}
