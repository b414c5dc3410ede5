//go:build linux

package dirlife

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// noAttrs is a fault seam for a filesystem without extended attributes.
func noAttrs(step, name string) error {
	if step == stepOwnerAttr {
		return unix.ENOTSUP
	}
	return nil
}

// TestOwnershipByAttr: a claimed root carries the attribute and no entry of
// the layout's; the check of an owned root reads the attribute and lists
// nothing.
func TestOwnershipByAttr(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 1, Files{"f": nil})
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
		t.Fatalf("root = %v, want [gen-1]", got)
	}
	r, err := os.OpenRoot(l.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir, err := r.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	// Plant many entries: an owned root's check must not look at them.
	for i := range 100 {
		os.WriteFile(filepath.Join(l.Root, "junk-"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644)
	}
	var steps []string
	l.faults = func(step, name string) error { steps = append(steps, step); return nil }
	if own, err := l.ownedBy("test", r, dir); own != byAttr || err != nil {
		t.Fatalf("ownedBy = %v, %v, want byAttr", own, err)
	}
	if !slices.Equal(steps, []string{stepOwnerAttr}) {
		t.Fatalf("ownedBy took steps %v, want one attribute read", steps)
	}
}

// TestOwnershipByMarker: where the filesystem holds no extended attribute
// (ENOTSUP), the layout claims Root with the marker file, keeps it through
// Prune and Reset, recognises it, and refuses a foreign root as strictly.
func TestOwnershipByMarker(t *testing.T) {
	l := genLayout(t)
	l.faults = noAttrs
	mustWrite(t, l, 1, Files{"f": nil})
	mustWrite(t, l, 2, Files{"f": nil})
	if err := l.Prune(2); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{markerName, "gen-2"}) {
		t.Fatalf("root after Prune = %v, want the marker and gen-2", got)
	}
	if data, err := os.ReadFile(filepath.Join(l.Root, markerName)); err != nil || string(data) != markerText {
		t.Fatalf("marker = %q, %v", data, err)
	}
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{markerName}) {
		t.Fatalf("root after Reset = %v, want the marker alone", got)
	}
	d, _ := os.Open(l.Root)
	defer d.Close()
	if has, _ := (Layout[int64]{}).hasOwnerAttr(d); has {
		t.Fatal("the attribute was set where the filesystem refuses it")
	}

	foreign := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "gen-3"), []byte("precious"), 0o644)
	lf := Layout[int64]{Root: foreign, Codec: l.Codec, faults: noAttrs}
	if err := lf.Reset(); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Reset of a foreign root without attributes = %v, want ErrNotOwned", err)
	}
	if got := rootEntries(t, foreign); !slices.Equal(got, []string{"gen-3"}) {
		t.Fatalf("a refused Reset changed the foreign root: %v", got)
	}
}

// TestLegacyMarkerRoot: a root claimed by an earlier version (its marker
// and lock files) is still owned; it gets the attribute, and its marker and
// lock files go.
func TestLegacyMarkerRoot(t *testing.T) {
	l := genLayout(t)
	os.MkdirAll(filepath.Join(l.Root, "gen-4"), 0o755)
	os.WriteFile(filepath.Join(l.Root, "gen-4", "f"), []byte("old"), 0o644)
	os.WriteFile(filepath.Join(l.Root, markerName), []byte(markerText), 0o644)
	os.WriteFile(filepath.Join(l.Root, lockName), nil, 0o644)
	if ids, err := l.IDs(); err != nil || !slices.Equal(ids, []int64{4}) {
		t.Fatalf("IDs = %v, %v", ids, err)
	}
	mustWrite(t, l, 5, Files{"f": nil})
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-4", "gen-5"}) {
		t.Fatalf("root after a Write = %v, want the IDs alone", got)
	}
	d, _ := os.Open(l.Root)
	defer d.Close()
	if has, err := (Layout[int64]{}).hasOwnerAttr(d); !has || err != nil {
		t.Fatalf("attribute after migration: %v, %v", has, err)
	}
	if err := l.Prune(4); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := readTree(t, l.Dir(4)); string(got["f"]) != "old" {
		t.Fatalf("gen-4 = %v", got)
	}
}

// TestForeignAttrValue: an attribute of the layout's name with another
// value does not make a root owned.
func TestForeignAttrValue(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "data"), []byte("precious"), 0o644)
	if err := unix.Setxattr(root, ownerAttr, []byte("something else"), 0); err != nil {
		t.Skipf("cannot set an attribute here: %v", err)
	}
	l := Layout[int64]{Root: root, Codec: IntCodec[int64]{Prefix: "gen-"}}
	if err := l.Prune(); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Prune = %v, want ErrNotOwned", err)
	}
	if got := rootEntries(t, root); !slices.Equal(got, []string{"data"}) {
		t.Fatalf("root = %v", got)
	}
}
