//go:build unix

package platform_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"leasekit.dev/internal/testkit/crash"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
)

const envCrashChild = "PLATFORM_TEST_CRASH_CHILD" // Root; the child publishes until killed

// TestCrashChild is the child of TestCrash: a booted Publisher publishing
// new generations and changing the current one until it is killed, with
// a lease taken now and then so that superseded generations linger.
func TestCrashChild(t *testing.T) {
	crash.Child(t)
	p := platform.NewPublisher(os.Getenv(envCrashChild), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	go p.Run(ctx)
	var release func()
	for i := 0; ; i++ {
		gen := int64(1 + i/2)
		if _, err := p.Publish(ctx, gen, moduletest.Variant(i%4), 0); err != nil {
			t.Fatal(err)
		}
		crash.Ready()
		if i%3 == 0 {
			if release != nil {
				release()
			}
			_, release, _ = p.Store().Lease()
			if i%2 == 0 {
				// The rewrite below must not wait for this lease forever.
				release()
				release = nil
			}
		}
	}
}

// TestCrash kills a publishing child with SIGKILL at random instants:
// after each kill every generation directory in Root is complete, and a
// booted Publisher finds Root empty and publishes again.
func TestCrash(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 8
	}
	root := filepath.Join(t.TempDir(), "platform")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	variants := make([]map[string][]byte, 4)
	for v := range variants {
		variants[v] = moduletest.Variant(v)
	}
	var dirsChecked int
	for i := range kills {
		crash.Start(t, "TestCrashChild", envCrashChild+"="+root).Kill(time.Duration(rng.IntN(50_000)) * time.Microsecond)

		p := platform.NewPublisher(root, platform.PublisherOptions{})
		for _, dir := range genDirs(t, root) {
			complete := false
			for _, v := range variants {
				complete = complete || sameFiles(readTree(t, dir), v)
			}
			if !complete {
				t.Fatalf("kill %d: %s is partial: %d files", i, dir, len(readTree(t, dir)))
			}
			dirsChecked++
		}
		// The specified Layout, after the crash: Prune leaves exactly the
		// kept generations when it returns, whatever the child left (the
		// Publisher's gen-<n>-<digest> directories are not the specified
		// Layout's, and go too).
		gens, err := p.Layout().Generations()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, g := range gens {
			want = append(want, filepath.Base(p.Layout().Dir(g)))
		}
		slices.Sort(want)
		if err := (platform.Layout{Root: root}).Prune(gens...); err != nil {
			t.Fatalf("kill %d: Prune(%v): %v", i, gens, err)
		}
		if got := dirtree.MustNames(t, root); !slices.Equal(got, want) {
			t.Fatalf("kill %d: right after Prune(%v), Root holds %v, want %v", i, gens, got, want)
		}
		if err := p.Boot(); err != nil {
			t.Fatalf("kill %d: Boot: %v", i, err)
		}
		if got := dirtree.MustNames(t, root); len(got) != 0 {
			t.Fatalf("kill %d: right after Boot, Root holds %v", i, got)
		}
		if stray := strayEntries(t, root); len(stray) != 0 || len(generations(t, p)) != 0 {
			t.Fatalf("kill %d: after Boot, Root holds %v", i, dirtree.MustNames(t, root))
		}
		if _, err := p.Publish(context.Background(), 1, variants[i%4], 0); err != nil {
			t.Fatalf("kill %d: publish after the crash: %v", i, err)
		}
	}
	if dirsChecked == 0 {
		t.Fatal("no generation directory was checked")
	}
	t.Logf("%d kills, %d generation directories checked", kills, dirsChecked)
}
