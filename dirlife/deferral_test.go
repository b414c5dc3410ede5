//go:build unix

package dirlife

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
	"pgregory.net/rapid"
)

// TestDeferredRemovalModel drives a Layout with DeferRemoval, whose
// removals are slowed through the seam so that they are still under way
// at the next steps, with random Writes (new IDs and rewrites), Prunes and
// Settles, and plants stray files, symbolic links and directories named
// like IDs between them. Invariant, after every step: every directory
// that a Write published and no Prune since left out of its keep set is
// in place with exactly its files; after Settle, Root holds exactly those
// directories and the strays planted since the last Prune (but for a
// stray directory a Prune kept), and nothing of the layout's own.
func TestDeferredRemovalModel(t *testing.T) {
	tmp := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		base, err := os.MkdirTemp(tmp, "case")
		if err != nil {
			t.Fatal(err)
		}
		var slow atomic.Int64 // the removal seam's delay, in microseconds
		l := Layout[int64]{
			Root:         filepath.Join(base, "root"),
			Codec:        IntCodec[int64]{Prefix: "gen-"},
			NoSync:       true,
			DeferRemoval: true,
			removing:     func(string) { time.Sleep(time.Duration(slow.Load()) * time.Microsecond) },
		}
		defer func() {
			slow.Store(0)
			if err := l.Settle(context.Background()); err != nil {
				t.Fatalf("final Settle: %v", err)
			}
		}()
		published := map[int64]Files{}
		strays := map[string]bool{} // planted names; true for a directory
		version := 0
		ids := rapid.Int64Range(1, 6)

		t.Repeat(map[string]func(*rapid.T){
			"write": func(t *rapid.T) {
				id := ids.Draw(t, "id")
				version++
				files := versionFiles(id, version)
				if _, err := l.Write(id, files); err != nil {
					t.Fatalf("Write(%d): %v", id, err)
				}
				published[id] = files
				delete(strays, l.Codec.Format(id))
			},
			"prune": func(t *rapid.T) {
				keep := rapid.SliceOfDistinct(ids, func(id int64) int64 { return id }).Draw(t, "keep")
				slow.Store(int64(rapid.IntRange(0, 2000).Draw(t, "slow")))
				if err := l.Prune(keep...); err != nil {
					t.Fatalf("Prune(%v): %v", keep, err)
				}
				kept := map[string]bool{}
				for _, id := range keep {
					kept[l.Codec.Format(id)] = true
				}
				for id := range published {
					if !slices.Contains(keep, id) {
						delete(published, id)
					}
				}
				for name, dir := range strays {
					if !dir || !kept[name] {
						delete(strays, name)
					}
				}
			},
			"plant": func(t *rapid.T) {
				id := ids.Draw(t, "id")
				name := l.Codec.Format(id)
				if _, err := os.Lstat(filepath.Join(l.Root, name)); !errors.Is(err, os.ErrNotExist) {
					t.Skip("the name is taken")
				}
				p := filepath.Join(l.Root, name)
				var err error
				kind := rapid.SampledFrom([]string{"file", "link", "dir"}).Draw(t, "kind")
				switch kind {
				case "file":
					err = os.WriteFile(p, []byte("stray"), 0o644)
				case "link":
					err = os.Symlink(".", p)
				case "dir":
					err = os.Mkdir(p, 0o755)
				}
				if errors.Is(err, os.ErrNotExist) {
					t.Skip("no root yet")
				}
				if err != nil {
					t.Fatal(err)
				}
				strays[name] = kind == "dir"
			},
			"settle": func(t *rapid.T) {
				if err := l.Settle(context.Background()); err != nil {
					t.Fatalf("Settle: %v", err)
				}
				var want []string
				for id := range published {
					want = append(want, l.Codec.Format(id))
				}
				for name := range strays {
					want = append(want, name)
				}
				slices.Sort(want)
				if _, err := os.Stat(l.Root); err != nil {
					return
				}
				if got := rootEntries(t, l.Root); !slices.Equal(got, want) {
					t.Fatalf("Root after Settle = %v, want %v", got, want)
				}
			},
			"": func(t *rapid.T) {
				for id, files := range published {
					if got := readTree(t, l.Dir(id)); !sameFiles(got, files) {
						t.Fatalf("%s holds %d files, want the %d it was last published with", l.Dir(id), len(got), len(files))
					}
				}
			},
		})
	})
}

// TestBlockedRemoval: a removal that never returns (blocked through the
// seam) costs its caller at most RemovalDeadline, after which the call
// returns a StalledError naming it; Writes, IDs and deferring Prunes go
// on meanwhile, with no time passing; a Prune that waits for its removals
// finds it under way and waits for it too, with its own deadline, and no
// second attempt at it starts while it is blocked; and once it returns,
// Settle reports nothing and Root holds only IDs.
func TestBlockedRemoval(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("defer=%v", deferred), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const deadline = 30 * time.Second
				unblock := make(chan struct{})
				var mu sync.Mutex
				attempts := map[string]int{}
				l := genLayout(t)
				l.NoSync = true
				l.DeferRemoval = deferred
				l.RemovalDeadline = deadline
				l.removing = func(was string) {
					mu.Lock()
					attempts[was]++
					mu.Unlock()
					if was == "gen-1" {
						<-unblock
					}
				}
				mustWrite(t, l, 1, versionFiles(1, 1))
				mustWrite(t, l, 2, versionFiles(2, 1))

				start := time.Now()
				pruned := make(chan error, 1)
				go func() { pruned <- l.Prune(2) }()
				synctest.Wait()
				// The exclusive lock is let go before the removal: others
				// go on, with no time passing.
				mustWrite(t, l, 3, versionFiles(3, 1))
				mustWrite(t, l, 2, versionFiles(2, 2)) // a rewrite: its old copy goes
				if ids, err := l.IDs(); err != nil || !slices.Equal(ids, []int64{2, 3}) {
					t.Fatalf("IDs() = %v, %v, want [2 3]", ids, err)
				}
				second := make(chan error, 1)
				go func() { second <- l.Prune(2, 3) }()
				if deferred {
					if err := <-second; err != nil {
						t.Fatalf("a second deferring Prune = %v, want nil", err)
					}
				}
				if time.Since(start) != 0 {
					t.Fatalf("other calls took %v of fake time beside a blocked removal", time.Since(start))
				}
				// stalled checks that err is a StalledError naming gen-1
				// under an aside name, and returns that name.
				stalled := func(call string, err error) string {
					t.Helper()
					var se *StalledError
					if !errors.As(err, &se) || !errors.Is(err, ErrRemovalStalled) || len(se.Entries) != 1 || se.Entries[0].Name != "gen-1" || !names.IsPlainAside(se.Entries[0].Aside) {
						t.Fatalf("%s past the deadline = %v, want a StalledError naming gen-1 under an aside name", call, err)
					}
					return se.Entries[0].Aside
				}
				var aside string
				if deferred {
					if err := <-pruned; err != nil {
						t.Fatalf("a deferring Prune = %v, want nil", err)
					}
					aside = stalled("Settle", l.Settle(context.Background()))
				} else {
					aside = stalled("the first Prune", <-pruned)
					// The second found gen-1 under way, and waited for it
					// from the same instant.
					if stalled("the second Prune", <-second) != aside {
						t.Fatal("the two Prunes name gen-1 under two aside names")
					}
				}
				if time.Since(start) != deadline {
					t.Fatalf("the wait returned after %v, want the deadline %v", time.Since(start), deadline)
				}
				if got := rootEntries(t, l.Root); !slices.Equal(got, []string{aside, "gen-2", "gen-3"}) {
					t.Fatalf("Root = %v, want gen-2, gen-3 and the blocked entry", got)
				}
				// A retry leaves it to the running attempt (waiting for
				// it, unless deferring).
				if err := l.Prune(2, 3); deferred && err != nil {
					t.Fatalf("a deferring Prune while the removal is blocked = %v, want nil", err)
				} else if !deferred {
					stalled("a Prune while the removal is blocked", err)
				}
				mu.Lock()
				n := attempts["gen-1"]
				mu.Unlock()
				if n != 1 {
					t.Fatalf("%d attempts at gen-1's removal, want 1", n)
				}

				close(unblock)
				if err := l.Settle(context.Background()); err != nil {
					t.Fatalf("Settle once the removal returned = %v", err)
				}
				if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-2", "gen-3"}) {
					t.Fatalf("Root after Settle = %v, want [gen-2 gen-3]", got)
				}
			})
		})
	}
}

// TestResetStallsOneDeadline: a Reset whose own removal and another
// call's removal both hang returns once RemovalDeadline has passed, not
// after one deadline for each, with a StalledError naming both.
func TestResetStallsOneDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const deadline = 30 * time.Second
		unblock := make(chan struct{})
		l := genLayout(t)
		l.NoSync = true
		l.RemovalDeadline = deadline
		l.removing = func(string) { <-unblock }
		mustWrite(t, l, 1, versionFiles(1, 1))
		mustWrite(t, l, 2, versionFiles(2, 1))
		deferring := l
		deferring.DeferRemoval = true
		if err := deferring.Prune(2); err != nil { // gen-1's removal hangs
			t.Fatal(err)
		}
		start := time.Now()
		err := l.Reset() // gen-2's removal hangs too
		if d := time.Since(start); d != deadline {
			t.Errorf("Reset returned after %v, want the deadline %v", d, deadline)
		}
		var names []string
		for e := range errorsOf[*StalledError](err) {
			for _, en := range e.Entries {
				names = append(names, en.Name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"gen-1", "gen-2"}) {
			t.Errorf("Reset = %v, want StalledErrors naming gen-1 and gen-2", err)
		}
		close(unblock)
		settle(t, l)
	})
}

// errorsOf yields the errors of type E that err is or joins.
func errorsOf[E error](err error) func(func(E) bool) {
	return func(yield func(E) bool) {
		var walk func(error) bool
		walk = func(err error) bool {
			if e, ok := err.(E); ok {
				return yield(e)
			}
			switch u := err.(type) {
			case interface{ Unwrap() []error }:
				for _, e := range u.Unwrap() {
					if !walk(e) {
						return false
					}
				}
			case interface{ Unwrap() error }:
				return walk(u.Unwrap())
			}
			return true
		}
		walk(err)
	}
}

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
