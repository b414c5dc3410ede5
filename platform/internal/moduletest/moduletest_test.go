package moduletest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
)

// TestFixtures: the acme platform builds, a shop of n components renders
// n resources against it, and the written modules hold what was given.
func TestFixtures(t *testing.T) {
	p := moduletest.Build(t)
	for _, n := range []int{1, 4} {
		out, err := kernel.New().Render(context.Background(), moduletest.Shop(p, "v1.0.0", n))
		if err != nil {
			t.Fatalf("shop of %d components: %v", n, err)
		}
		if out.Instance != "shop" || len(out.Resources) != n {
			t.Fatalf("shop of %d components rendered %q with %d resources", n, out.Instance, len(out.Resources))
		}
	}
	files := moduletest.PlatformModule("name: \"x\"\n")
	for _, dir := range []string{moduletest.WriteModule(t, files), writeTemp(t, files)} {
		for name, data := range files {
			if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || string(got) != data {
				t.Fatalf("%s in %s = %q, %v; want %q", name, dir, got, err, data)
			}
		}
	}
}

func writeTemp(t *testing.T, files map[string]string) string {
	b := map[string][]byte{}
	for k, v := range files {
		b[k] = []byte(v)
	}
	dir := moduletest.WriteTemp(b)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestVariant: every variant builds, named acme, with the web catalog at
// v1.<v>.0 and, for odd v only, the db catalog; no two variants hold the
// same bytes.
func TestVariant(t *testing.T) {
	seen := map[string]int{}
	for v := range 4 {
		files := moduletest.Variant(v)
		dir := t.TempDir()
		dirtree.MustWrite(t, dir, files)
		p, err := kernel.New().BuildPlatform(context.Background(), dir)
		if err != nil {
			t.Fatalf("variant %d: %v", v, err)
		}
		if p.Name != "acme" || len(p.Catalogs) != 1+v%2 {
			t.Fatalf("variant %d built %q with catalogs %v", v, p.Name, p.Catalogs)
		}
		if c := p.Catalogs[len(p.Catalogs)-1]; c.Path != moduletest.WebPath || c.Version != fmt.Sprintf("v1.%d.0", v) {
			t.Fatalf("variant %d: web catalog %+v", v, c)
		}
		key := fmt.Sprint(files)
		if w, ok := seen[key]; ok {
			t.Fatalf("variants %d and %d hold the same files", w, v)
		}
		seen[key] = v
	}
}
