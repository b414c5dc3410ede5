//go:build linux

package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// linkedTree is a WriteStream fill of two files, a subdirectory and two
// links to files inside the tree.
func linkedTree(ctx context.Context, dir *os.Root) error {
	if err := dir.WriteFile("a", []byte("alpha"), 0o644); err != nil {
		return err
	}
	if err := dir.Mkdir("sub", 0o755); err != nil {
		return err
	}
	if err := dir.WriteFile("sub/b", []byte("beta"), 0o600); err != nil {
		return err
	}
	if err := dir.Symlink("../a", "sub/to-a"); err != nil {
		return err
	}
	return dir.Symlink("sub/b", "to-b")
}

// TestAdoptKeepsRecordedAndVerifies: a layout under RecordDigest records
// each directory's digest; Adopt, in a layout value of its own (another
// process), keeps exactly the ID directories that carry one, with the
// digest each write reported, and removes the rest (an ID directory made
// by hand, a staging leftover, a file); Verify matches an intact
// directory, and tells a retargeted link, a changed mode and a setgid
// directory.
func TestAdoptKeepsRecordedAndVerifies(t *testing.T) {
	ctx := context.Background()
	l := genLayout(t)
	l.RecordDigest = true
	w1, err := l.WriteStream(ctx, 1, linkedTree, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, l, 2, Files{"f": []byte("two")})
	settle(t, l)
	// Beside them: what no complete write of a recording layout leaves.
	if err := os.Mkdir(filepath.Join(l.Root, "gen-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(l.Root, "gen-3", "f"), []byte("by hand"), 0o644)
	os.Mkdir(filepath.Join(l.Root, stagePrefix+"0123456789abcdef"), 0o755)
	os.WriteFile(filepath.Join(l.Root, "stray"), nil, 0o644)

	next := Layout[int64]{Root: l.Root, Codec: l.Codec, RecordDigest: true}
	kept, recorded, err := next.Adopt()
	if err != nil || !recorded {
		t.Fatalf("Adopt: %v, recorded %v", err, recorded)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(kept)), []int64{1, 2}) || kept[1] != w1.Digest {
		t.Fatalf("Adopt kept %v, want 1 (%v) and 2", kept, w1.Digest)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1", "gen-2"}) {
		t.Fatalf("after Adopt, Root holds %v", got)
	}
	if err := next.Verify(ctx, 1, kept[1]); err != nil {
		t.Fatalf("Verify of an intact directory: %v", err)
	}
	if err := next.Verify(ctx, 1, kept[2]); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Verify against another digest: %v, want ErrDigestMismatch", err)
	}

	dir := next.Dir(1)
	for _, c := range []struct {
		what     string
		do, undo func() error
		refused  bool
	}{
		{"a retargeted link", func() error { return relink(dir, "to-b", "a") }, func() error { return relink(dir, "to-b", "sub/b") }, false},
		{"a changed mode", func() error { return os.Chmod(filepath.Join(dir, "sub/b"), 0o640) }, func() error { return os.Chmod(filepath.Join(dir, "sub/b"), 0o600) }, false},
		{"a setgid directory", func() error { return os.Chmod(filepath.Join(dir, "sub"), 0o755|fs.ModeSetgid) }, func() error { return os.Chmod(filepath.Join(dir, "sub"), 0o755) }, true},
	} {
		if err := c.do(); err != nil {
			t.Fatal(err)
		}
		err := next.Verify(ctx, 1, kept[1])
		_, isName := errors.AsType[*NameError](err)
		if c.refused && !isName || !c.refused && !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("Verify after %s: %v", c.what, err)
		}
		if err := c.undo(); err != nil {
			t.Fatal(err)
		}
		if err := next.Verify(ctx, 1, kept[1]); err != nil {
			t.Fatalf("Verify after %s was undone: %v", c.what, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := next.Verify(cctx, 1, kept[1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with an ended context: %v", err)
	}
}

func relink(dir, name, target string) error {
	p := filepath.Join(dir, name)
	if err := os.Remove(p); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// TestAdoptWithoutAttributes: where Root's filesystem holds no extended
// attributes, Adopt keeps nothing, says so, and empties Root as Reset
// does; where it refuses only the digest's attribute, writes succeed and
// record nothing, and Adopt keeps none of them.
func TestAdoptWithoutAttributes(t *testing.T) {
	l := genLayout(t)
	l.RecordDigest = true
	l.faults = noAttrs
	mustWrite(t, l, 1, Files{"f": []byte("one")})
	kept, recorded, err := l.Adopt()
	if err != nil || recorded || len(kept) != 0 {
		t.Fatalf("Adopt without attributes = %v, %v, %v; want nothing kept, not recorded", kept, recorded, err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{markerName}) {
		t.Fatalf("after Adopt without attributes, Root holds %v, want only the marker", got)
	}

	l = genLayout(t)
	l.RecordDigest = true
	l.faults = func(step, name string) error {
		if step == stepDigestAttr {
			return unix.ENOTSUP
		}
		return nil
	}
	mustWrite(t, l, 1, Files{"f": []byte("one")})
	l.faults = nil
	kept, recorded, err = l.Adopt()
	if err != nil || !recorded || len(kept) != 0 {
		t.Fatalf("Adopt of a directory without a record = %v, %v, %v; want nothing kept", kept, recorded, err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("after Adopt, Root holds %v", got)
	}
}
