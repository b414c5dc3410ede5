//go:build unix

package dirlife

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
)

// registered returns how many roots this process keeps state for.
func registered() int {
	n, _ := rootlock.Registered(sys.Key{})
	return n
}

// rootKeyOf returns the registry key of the directory dir.
func rootKeyOf(t *testing.T, dir string) sys.Key {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	key, err := sys.KeyOf(d)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// awaitRemovals waits for the background removals of root without
// taking their failures, as a process that never calls Settle leaves them.
func awaitRemovals(t *testing.T, root string) {
	t.Helper()
	if st := rootlock.Lookup(rootKeyOf(t, root)); st != nil {
		for _, r := range st.Removals.Pending() {
			<-r.Done()
		}
		rootlock.Put(st)
	}
}

// TestRegistryForgetsIdleRoots: a process that uses many roots, each
// with background removals, keeps no state and no goroutine for any of
// them once they are idle.
func TestRegistryForgetsIdleRoots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var keys []sys.Key
		for range 40 {
			l := genLayout(t)
			mustWrite(t, l, 1, versionFiles(1, 1))
			mustWrite(t, l, 1, versionFiles(1, 2)) // the old copy: background garbage
			mustWrite(t, l, 2, versionFiles(2, 1))
			if err := l.Prune(1); err != nil {
				t.Fatal(err)
			}
			settle(t, l)
			keys = append(keys, rootKeyOf(t, l.Root))
		}
		synctest.Wait() // every remover goroutine has ended: none is blocked
		for i, key := range keys {
			if _, kept := rootlock.Registered(key); kept {
				t.Errorf("root %d of %d is still registered after it went idle", i, len(keys))
			}
		}
	})
}

// TestRegistryBoundsUnreportedFailures: roots whose deferred removals
// failed and that are never used again keep their failures for a report
// only up to a bound: their state does not grow with their number.
func TestRegistryBoundsUnreportedFailures(t *testing.T) {
	before := registered()
	for range rootlock.MaxUnreported + 8 {
		l := genLayout(t)
		l.devices = fakeMounts("sub")
		l.DeferRemoval = true
		mustWrite(t, l, 1, Files{"sub/f": nil})
		mustWrite(t, l, 1, Files{"f": nil}) // the old copy fails to go
		awaitRemovals(t, l.Root)
	}
	if n := registered() - before; n > rootlock.MaxUnreported {
		t.Fatalf("%d idle roots registered for their unreported failures, want at most %d", n, rootlock.MaxUnreported)
	}
}

// TestRecreatedRootReportsNoStaleFailure: a root deleted with a removal
// failure unreported, and another made where its inode number is reused,
// does not inherit the failure: a Prune of the new root reports none.
func TestRecreatedRootReportsNoStaleFailure(t *testing.T) {
	parent := t.TempDir()
	old := Layout[int64]{Root: filepath.Join(parent, "old"), Codec: IntCodec[int64]{Prefix: "gen-"}, devices: fakeMounts("sub"), DeferRemoval: true}
	mustWrite(t, old, 1, Files{"sub/f": nil})
	mustWrite(t, old, 1, Files{"f": nil}) // the old copy fails to go
	awaitRemovals(t, old.Root)
	key := rootKeyOf(t, old.Root)
	if err := os.RemoveAll(old.Root); err != nil {
		t.Fatal(err)
	}
	// Directories made at once in the same parent reuse a freed inode
	// number on most filesystems (ext4 does); try a few.
	var reused string
	for i := range 256 {
		dir := filepath.Join(parent, fmt.Sprintf("new%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if rootKeyOf(t, dir) == key {
			reused = dir
			break
		}
	}
	if reused == "" {
		t.Skip("the filesystem reused no inode number")
	}
	l := Layout[int64]{Root: reused, Codec: IntCodec[int64]{Prefix: "gen-"}}
	mustWrite(t, l, 1, Files{"f": nil})
	if err := l.Prune(1); err != nil {
		t.Fatalf("Prune of a new root = %v, want nil: the failure was in a root deleted before it", err)
	}
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("Settle of a new root = %v, want nil", err)
	}
}

// TestResetWaitsForDeferredRemovals: Reset waits for the removals this
// process left running (here: deferred, and slowed), so that when it
// returns Root is empty.
func TestResetWaitsForDeferredRemovals(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true
	mustWrite(t, l, 1, versionFiles(1, 1))
	mustWrite(t, l, 2, versionFiles(2, 1))
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	l.DeferRemoval = true
	l.removing = func(string) {
		started <- struct{}{}
		<-release
	}
	if err := l.Prune(2); err != nil {
		t.Fatal(err)
	}
	<-started
	l.removing = nil
	done := make(chan error)
	go func() { done <- l.Reset() }()
	select {
	case err := <-done:
		t.Fatalf("Reset returned (%v) while a removal it must wait for was blocked", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root after Reset = %v, want nothing", got)
	}
}

func mkdirAll(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
