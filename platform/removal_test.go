package platform_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/platformmodule"
)

// bulky is moduleFiles(v) with n more files: a module whose removal takes
// a while.
func bulky(t tb, v, n int) platformmodule.Files {
	t.Helper()
	files := moduletest.Variant(v)
	for i := range n {
		files[fmt.Sprintf("data/d%02d/f%05d.txt", i%50, i)] = nil
	}
	return files
}

// TestStrayFileNamedLikeGenerationNeverCostsTheCurrent: a stray file in
// Root named like a generation that is published next is garbage, never
// a name under which the generation's directory is later removed: the
// current, leased generation's directory stays and renders.
func TestStrayFileNamedLikeGenerationNeverCostsTheCurrent(t *testing.T) {
	warmKernel(t)
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	root := p.Layout().Root
	if _, err := p.Publish(ctx, 1, bulky(t, 0, 5_000), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 2, moduletest.Variant(1), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "gen-4"), []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 3, moduletest.Variant(2), 0); err != nil {
		t.Fatal(err)
	}
	want := moduletest.Variant(3)
	if _, err := p.Publish(ctx, 4, want, 0); err != nil {
		t.Fatal(err)
	}
	rec, release, ok := p.Store().Lease()
	if !ok || rec.Generation != 4 {
		t.Fatalf("Lease() = %d, %v, want generation 4", rec.Generation, ok)
	}
	defer release()
	if err := (platform.Layout{Root: root}).Settle(); err != nil {
		t.Fatal(err)
	}
	checkTree(t, rec.Dir, want)
	if _, _, err := p.Render(ctx, renderInstance(t)); err != nil {
		t.Fatalf("Render after the stray file: %v", err)
	}
}
