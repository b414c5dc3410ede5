package moduletest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
