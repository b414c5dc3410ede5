package platformtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/platform/platformtest"
	"leasekit.dev/publish"
)

// reconciler keeps a Store and a Layout by hand, as an operator's
// reconciler does, by the package's three rules.
type reconciler struct {
	kernel *kernel.Kernel
	layout platform.Layout
	store  platform.Store
	files  platformmodule.Files // the files of the record the store holds
}

// newReconciler starts the process on root. Its boot step empties Root
// before any reader exists: the resource is the source of truth, and the
// first reconcile writes what it needs again (which is also why a durable
// write buys nothing here).
func newReconciler(root string) (platformtest.Target, error) {
	r := &reconciler{kernel: kernel.New(), layout: platform.Layout{Root: root, NoSync: true}}
	if err := r.layout.Reset(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *reconciler) Store() *platform.Store { return &r.store }

func (r *reconciler) Reconcile(ctx context.Context, gen int64, files platformmodule.Files) error {
	cur, held := r.store.Generated()
	change := held && gen == cur.Generation // the current generation's files change
	switch {
	case held && gen < cur.Generation:
		return &publish.StaleError[int64]{Key: gen, Current: cur.Generation}
	case change && maps.EqualFunc(files, r.files, bytes.Equal):
		return r.prune() // rule 2: write nothing, and still prune
	case change:
		r.store.Clear() // rule 3: no new lease on the directory about to change
	}
	if slices.Contains(r.store.Leased(), gen) {
		// Rule 3: a render still reads the directory; the controller
		// retries once it is done.
		if change {
			r.store.SetGenerated(cur)
		}
		return fmt.Errorf("generation %d is leased by a render; retry once it is released", gen)
	}
	dir, err := r.layout.Write(gen, files)
	if err != nil {
		if change {
			r.store.SetGenerated(cur) // a failed Write leaves the directory as it was
		}
		return err
	}
	p, err := r.kernel.BuildPlatform(ctx, dir)
	if err != nil {
		if change {
			r.files = nil // the directory holds files that do not build: serve nothing
		}
		return errors.Join(err, r.prune())
	}
	r.store.SetGenerated(platform.Generated{Generation: gen, Dir: dir, Platform: p})
	r.files = files
	return r.prune() // rule 1: set, then prune
}

// prune keeps the current generation and every leased one.
func (r *reconciler) prune() error {
	keep := r.store.Leased()
	if g := r.store.Generation(); g != 0 {
		keep = append(keep, g)
	}
	return r.layout.Prune(keep...)
}

func (r *reconciler) Delete(context.Context) error {
	r.store.Clear()
	r.files = nil
	return r.prune()
}

// An operator checks its own reconciler in its tests: Check drives it
// through random reconciles, deletes, restarts and renders, and fails the
// test with a short sequence in words when a property breaks. The
// reconciler here, defined above, keeps the package's three rules; this
// example also runs it once by hand, through rule 3.
func ExampleCheck() {
	// In a _test.go file, func TestReconciler(t *testing.T):
	testReconciler := func(t *testing.T) {
		platformtest.Check(t, newReconciler)
	}
	_ = testReconciler

	root, err := os.MkdirTemp("", "platform")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	target, err := newReconciler(filepath.Join(root, "modules"))
	if err != nil {
		log.Fatal(err)
	}
	module := func(version string) platformmodule.Files {
		files, err := platformmodule.Generate(platformmodule.Input{
			Name:     "acme",
			Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@v1", Version: version}},
		})
		if err != nil {
			log.Fatal(err)
		}
		return files
	}
	ctx := context.Background()
	if err := target.Reconcile(ctx, 1, module("v1.4.0")); err != nil {
		log.Fatal(err)
	}
	rec, release, _ := target.Store().Lease() // a render reads generation 1
	fmt.Println(target.Reconcile(ctx, 1, module("v1.5.0")))
	release()
	fmt.Println(target.Reconcile(ctx, 1, module("v1.5.0")))
	fmt.Println(target.Store().Generation(), filepath.Base(rec.Dir))
	// Output:
	// generation 1 is leased by a render; retry once it is released
	// <nil>
	// 1 gen-1
}
