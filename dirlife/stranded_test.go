package dirlife

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/dirlife/internal/names"
)

// interruptRewrite leaves id as a rewrite without an atomic exchange leaves
// it when the process dies between its two renames: the old directory
// moved aside under the name the layout gives it, the ID's path empty.
func interruptRewrite(t tb, l Layout[int64], id int64) string {
	t.Helper()
	held := names.HeldName(l.Codec.Format(id))
	if err := os.Rename(l.Dir(id), filepath.Join(l.Root, held)); err != nil {
		t.Fatal(err)
	}
	return held
}

func checkIDs(t tb, l Layout[int64], want ...int64) {
	t.Helper()
	ids, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("IDs() = %v, want %v", ids, want)
	}
}

func mustPrune(t tb, l Layout[int64], keep ...int64) {
	t.Helper()
	if err := l.Prune(keep...); err != nil {
		t.Fatalf("Prune(%v): %v", keep, err)
	}
	settle(t, l)
}

func checkRootHolds(t tb, l Layout[int64], want ...string) {
	t.Helper()
	if got := rootEntries(t, l.Root); !slices.Equal(got, want) {
		t.Fatalf("Root holds %v, want %v", got, want)
	}
}

// TestPruneRestoresInterruptedRewrite: after a crash between the two
// renames of a rewrite, the ID is absent, and the next Prune that keeps it
// puts its last published directory back, bytes intact.
func TestPruneRestoresInterruptedRewrite(t *testing.T) {
	old := Files{"a": []byte("old a"), "d/b": []byte("old b")}
	l := genLayout(t)
	mustWrite(t, l, 7, old)
	mustWrite(t, l, 8, Files{"c": []byte("c")})
	interruptRewrite(t, l, 7)
	checkIDs(t, l, 8)

	mustPrune(t, l, 7, 8)
	checkIDs(t, l, 7, 8)
	if got := readTree(t, l.Dir(7)); !sameFiles(got, old) {
		t.Fatalf("Dir(7) = %v, want the old files %v", got, old)
	}
	checkRootHolds(t, l, "gen-7", "gen-8")
}

// TestPruneDropsUnkeptMovedAsideCopy: a Prune that does not keep the ID
// removes its moved-aside copy, and a later Prune that keeps it finds
// nothing to restore: a pruned ID never comes back.
func TestPruneDropsUnkeptMovedAsideCopy(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 7, Files{"a": []byte("a")})
	mustWrite(t, l, 8, Files{"b": []byte("b")})
	interruptRewrite(t, l, 7)
	mustPrune(t, l, 8)
	checkRootHolds(t, l, "gen-8")
	mustPrune(t, l, 7, 8)
	checkIDs(t, l, 8)
}

// TestPruneRestoresNewestMovedAsideCopy: a Write that finds its ID's path
// empty publishes anew, whatever copy is moved aside; should that one be
// interrupted in turn, the newest copy is the one restored, and a copy
// superseded by a publication is garbage.
func TestPruneRestoresNewestMovedAsideCopy(t *testing.T) {
	v1, v2 := Files{"v": []byte("1")}, Files{"v": []byte("2")}
	l := genLayout(t)
	mustWrite(t, l, 7, v1)
	interruptRewrite(t, l, 7)
	mustWrite(t, l, 7, v2) // publishes anew: the v1 copy is stale
	checkIDs(t, l, 7)
	interruptRewrite(t, l, 7)
	checkIDs(t, l)
	mustPrune(t, l, 7)
	if got := readTree(t, l.Dir(7)); !sameFiles(got, v2) {
		t.Fatalf("Dir(7) = %v, want the newest copy %v", got, v2)
	}
	checkRootHolds(t, l, "gen-7")

	mustWrite(t, l, 8, v1)
	interruptRewrite(t, l, 8)
	mustWrite(t, l, 8, v2)
	mustPrune(t, l, 7, 8)
	if got := readTree(t, l.Dir(8)); !sameFiles(got, v2) {
		t.Fatalf("Dir(8) = %v, want the published %v", got, v2)
	}
	checkRootHolds(t, l, "gen-7", "gen-8")
}

// TestPruneRestoresLongName: an ID whose name leaves no room for itself in
// the moved-aside name is recorded by a digest, and restored all the same;
// a different ID of the same length is not confused with it.
func TestPruneRestoresLongName(t *testing.T) {
	l := Layout[string]{Root: filepath.Join(t.TempDir(), "root"), Codec: rawCodec{}}
	long, other := strings.Repeat("a", 250), strings.Repeat("a", 249)+"b"
	files := Files{"f": []byte("long")}
	for _, id := range []string{long, other} {
		if _, err := l.Write(id, files); err != nil {
			t.Fatal(err)
		}
		held := names.HeldName(l.Codec.Format(id))
		if len(held) > names.MaxElement {
			t.Fatalf("moved-aside name is %d bytes, over %d", len(held), names.MaxElement)
		}
		if err := os.Rename(l.Dir(id), filepath.Join(l.Root, held)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Prune(long); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids, err := l.IDs()
	if err != nil || !slices.Equal(ids, []string{long}) {
		t.Fatalf("IDs() = %v, %v, want only the long ID", ids, err)
	}
	if got := readTree(t, l.Dir(long)); !sameFiles(got, files) {
		t.Fatalf("Dir = %v, want %v", got, files)
	}
	if got := rootEntries(t, l.Root); len(got) != 1 {
		t.Fatalf("Root holds %v, want only the restored ID", got)
	}
}

// TestPruneRestoreMakesWay: a file or symbolic link planted in the empty
// path of a kept ID is garbage, and gives way to the restored directory.
func TestPruneRestoreMakesWay(t *testing.T) {
	outside := t.TempDir()
	for _, kind := range []string{"file", "symlink"} {
		t.Run(kind, func(t *testing.T) {
			l := genLayout(t)
			mustWrite(t, l, 7, Files{"a": []byte("a")})
			interruptRewrite(t, l, 7)
			var err error
			if kind == "file" {
				err = os.WriteFile(l.Dir(7), []byte("junk"), 0o644)
			} else {
				err = os.Symlink(outside, l.Dir(7))
			}
			if err != nil {
				t.Skip(err) // no symbolic links here
			}
			mustPrune(t, l, 7)
			checkIDs(t, l, 7)
			if got := readTree(t, l.Dir(7)); !sameFiles(got, Files{"a": []byte("a")}) {
				t.Fatalf("Dir(7) = %v", got)
			}
			checkRootHolds(t, l, "gen-7")
			if got := rootEntries(t, outside); len(got) != 0 {
				t.Fatalf("outside Root changed: %v", got)
			}
		})
	}
}

// TestResetRemovesMovedAsideCopies: Reset empties Root of moved-aside
// copies too, and nothing is restored afterwards.
func TestResetRemovesMovedAsideCopies(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 7, Files{"a": []byte("a")})
	interruptRewrite(t, l, 7)
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	checkRootHolds(t, l)
	mustPrune(t, l, 7)
	checkIDs(t, l)
}

// TestRestoreMeetsConcurrentWrite: a Write of an interrupted ID and a
// Prune that keeps it, at once, in either order: the Write publishes last
// or over the restored copy, so the ID ends with the Write's files, and
// the old copy is gone.
func TestRestoreMeetsConcurrentWrite(t *testing.T) {
	old, fresh := Files{"v": []byte("old")}, Files{"v": []byte("fresh")}
	for range 20 {
		l := genLayout(t)
		mustWrite(t, l, 7, old)
		interruptRewrite(t, l, 7)
		errs := make(chan error, 2)
		go func() { _, err := l.Write(7, fresh); errs <- err }()
		go func() { errs <- l.Prune(7) }()
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		mustPrune(t, l, 7)
		if got := readTree(t, l.Dir(7)); !sameFiles(got, fresh) {
			t.Fatalf("Dir(7) = %v, want the Write's %v", got, fresh)
		}
		checkRootHolds(t, l, "gen-7")
	}
}
