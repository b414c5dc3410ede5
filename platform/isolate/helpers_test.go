package isolate_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// writeModule writes files under a new directory and returns it.
func writeModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeTemp writes files into a new temporary directory.
func writeTemp(files map[string][]byte) string {
	dir, err := os.MkdirTemp("", "isolate-example")
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

// build builds the acme platform in process.
func build(t testing.TB) *kernel.Platform {
	t.Helper()
	p, err := kernel.New().BuildPlatform(context.Background(), generated(t, acme))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// generated writes the generated module of in and returns its directory.
func generated(t testing.TB, in platformmodule.Input) string {
	t.Helper()
	files, err := platformmodule.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for k, v := range files {
		m[k] = string(v)
	}
	return writeModule(t, m)
}

const webPath, dbPath, batchPath = "example.com/catalogs/web@v1", "example.com/catalogs/db@v0", "example.com/catalogs/batch@v2"

// acme is the platform most tests render against.
var acme = platformmodule.Input{
	Name:   "acme",
	Labels: map[string]string{"team": "platform"},
	Catalogs: []platformmodule.Catalog{
		{Path: webPath, Version: "v1.4.0", Kinds: []string{"Deployment", "Service"}},
		{Path: dbPath, Version: "v0.3.0", Kinds: []string{"Database"}, Disabled: true},
		{Path: batchPath, Version: "v2.1.0", Kinds: []string{"CronJob"}},
	},
}

const instanceModule = "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"

// instance returns an instance module whose package is body.
func instance(body string) map[string][]byte {
	return map[string][]byte{
		"cue.mod/module.cue": []byte(instanceModule),
		"shop.cue":           []byte("package shop\n\n" + strings.TrimSpace(body) + "\n"),
	}
}

// shop is the render of an instance named shop, requiring version of the
// web catalog, with n components, against p.
func shop(p *kernel.Platform, version string, n int) kernel.RenderInput {
	return kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"
requires: "` + webPath + `": "` + version + `"
` + components(n))}}
}

// components returns n components using the web catalog.
func components(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "components: c%02d: {kind: %q, catalog: %q, replicas: %d, spec: {image: \"app:%d\", port: %d}}\n",
			i, []string{"Deployment", "Service"}[i%2], webPath, i%3, i, 8000+i)
	}
	return b.String()
}

func platformModule(body string) map[string]string {
	return map[string]string{
		"cue.mod/module.cue": "module: \"platform.leasekit.dev/test@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"platform.cue":       "package platform\n\n" + body,
	}
}
