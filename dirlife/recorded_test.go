//go:build linux

package dirlife

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/tree"
	"pgregory.net/rapid"
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

// TestRecordedReadsAndVerifyChecks: a layout under RecordDigest records
// each directory's digest; Recorded, in a layout value of its own (another
// process), lists exactly the ID directories that carry one, with the
// digest each write reported, and removes nothing (an ID directory made by
// hand, a staging leftover, a file stay until a Prune to the recorded IDs
// removes them); Verify matches an intact directory, and tells a
// retargeted link, a changed mode and a setgid directory.
func TestRecordedReadsAndVerifyChecks(t *testing.T) {
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
	before := rootEntries(t, l.Root)
	kept, recorded, err := next.Recorded()
	if err != nil || !recorded {
		t.Fatalf("Recorded: %v, recorded %v", err, recorded)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(kept)), []int64{1, 2}) || kept[1] != w1.Digest {
		t.Fatalf("Recorded listed %v, want 1 (%v) and 2", kept, w1.Digest)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, before) {
		t.Fatalf("after Recorded, Root holds %v, want %v as before", got, before)
	}
	if err := next.Prune(slices.Collect(maps.Keys(kept))...); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1", "gen-2"}) {
		t.Fatalf("after a Prune to the recorded IDs, Root holds %v", got)
	}
	if err := next.Verify(ctx, 1, kept[1], nil); err != nil {
		t.Fatalf("Verify of an intact directory: %v", err)
	}
	if err := next.Verify(ctx, 1, kept[2], nil); !errors.Is(err, ErrDigestMismatch) {
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
		err := next.Verify(ctx, 1, kept[1], nil)
		_, isName := errors.AsType[*NameError](err)
		if c.refused && !isName || !c.refused && !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("Verify after %s: %v", c.what, err)
		}
		if err := c.undo(); err != nil {
			t.Fatal(err)
		}
		if err := next.Verify(ctx, 1, kept[1], nil); err != nil {
			t.Fatalf("Verify after %s was undone: %v", c.what, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := next.Verify(cctx, 1, kept[1], nil); !errors.Is(err, context.Canceled) {
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

// TestRecordedWithoutAttributes: where Root's filesystem holds no extended
// attributes, Recorded lists nothing and says so; where it refuses only
// the digest's attribute, writes succeed and record nothing, and Recorded
// lists none of them. It removes nothing either way.
func TestRecordedWithoutAttributes(t *testing.T) {
	l := genLayout(t)
	l.RecordDigest = true
	l.faults = noAttrs
	mustWrite(t, l, 1, Files{"f": []byte("one")})
	kept, recorded, err := l.Recorded()
	if err != nil || recorded || len(kept) != 0 {
		t.Fatalf("Recorded without attributes = %v, %v, %v; want nothing, not held", kept, recorded, err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{markerName, "gen-1"}) {
		t.Fatalf("after Recorded without attributes, Root holds %v, want gen-1 and the marker", got)
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
	kept, recorded, err = l.Recorded()
	if err != nil || !recorded || len(kept) != 0 {
		t.Fatalf("Recorded of a directory without a record = %v, %v, %v; want nothing listed", kept, recorded, err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
		t.Fatalf("after Recorded, Root holds %v, want gen-1", got)
	}
}

// TestRecordedOpensRootAsReset: Recorded creates a missing Root and claims
// it, refuses a root another owner's files fill, a root that is a
// symbolic link, and a layout without a Codec, touching nothing, as Reset
// does.
func TestRecordedOpensRootAsReset(t *testing.T) {
	l := genLayout(t)
	l.Root = filepath.Join(t.TempDir(), "a", "root")
	if kept, _, err := l.Recorded(); err != nil || len(kept) != 0 {
		t.Fatalf("Recorded of a missing Root = %v, %v; want it created, empty", kept, err)
	}
	// Claimed: a root holding what no layout wrote is still the layout's.
	os.WriteFile(filepath.Join(l.Root, "stray"), []byte("x"), 0o644)
	if err := (Layout[int64]{Root: l.Root}).Reset(); err != nil {
		t.Fatalf("Reset after Recorded created Root: %v", err)
	}

	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "theirs"), []byte("x"), 0o644)
	l.Root = foreign
	_, _, err := l.Recorded()
	rerr := (Layout[int64]{Root: foreign}).Reset()
	if !errors.Is(err, ErrNotOwned) || !errors.Is(rerr, ErrNotOwned) {
		t.Fatalf("Recorded of a foreign root: %v; Reset: %v; want ErrNotOwned from both", err, rerr)
	}
	if got := rootEntries(t, foreign); !slices.Equal(got, []string{"theirs"}) {
		t.Fatalf("a refused Recorded left %v", got)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	l.Root = link
	if _, _, err := l.Recorded(); !errors.Is(err, ErrUnsafeRoot) {
		t.Fatalf("Recorded of a symbolic link: %v, want ErrUnsafeRoot", err)
	}
	if _, _, err := (Layout[int64]{Root: t.TempDir()}).Recorded(); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("Recorded without a Codec: %v, want ErrNoCodec", err)
	}
}

// TestVerifyHashersAgreeWithTheWalk: Verify's walk hashing files aside,
// several at once, and the walk hashing each in turn agree on every tree,
// intact or corrupted: the same digest, or the same error, the first in
// walk order when a read fails before an entry no write publishes.
func TestVerifyHashersAgreeWithTheWalk(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := genLayout(t)
		files := Files{}
		for i := range rapid.IntRange(1, 40).Draw(rt, "files") {
			name := fmt.Sprintf("d%d/e%d/f%02d", rapid.IntRange(0, 3).Draw(rt, "dir"), rapid.IntRange(0, 2).Draw(rt, "sub"), i)
			if rapid.Bool().Draw(rt, "top") {
				name = fmt.Sprintf("f%02d", i)
			}
			files[name] = make([]byte, rapid.IntRange(0, 3*tree.BufSize).Draw(rt, "size"))
			for j := range files[name] {
				files[name][j] = byte(i + j)
			}
		}
		mustWrite(t, l, 1, files)
		dir := filepath.Join(l.Root, "gen-1")
		var paths []string
		for name := range files {
			paths = append(paths, name)
		}
		pick := func(label string) string {
			return paths[rapid.IntRange(0, len(paths)-1).Draw(rt, label)]
		}
		switch rapid.IntRange(0, 3).Draw(rt, "damage") {
		case 1: // a byte flipped, where the file has one
			p := filepath.Join(dir, pick("flipped"))
			b, _ := os.ReadFile(p)
			if len(b) > 0 {
				b[rapid.IntRange(0, len(b)-1).Draw(rt, "at")] ^= 1
				os.WriteFile(p, b, 0o644)
			}
		case 2: // a file no write publishes
			os.Chmod(filepath.Join(dir, pick("setuid")), 0o644|os.ModeSetuid)
		case 3: // a read that fails, and maybe a refused entry after it
			failing := filepath.Join("gen-1", pick("unreadable"))
			l.faults = func(step, name string) error {
				if step == stepHash && name == failing {
					return errInjected
				}
				return nil
			}
			os.Chmod(filepath.Join(dir, pick("setuid")), 0o644|os.ModeSetuid)
		}

		digest := func(hashers int) (Digest, error) {
			h, err := l.openRoot("verify", false, rootlock.Shared)
			if err != nil {
				rt.Fatal(err)
			}
			defer h.release()
			return l.digestDir(context.Background(), h, "gen-1", hashers, nil)
		}
		want, wantErr := digest(0)
		for _, n := range []int{2, 3, maxHashers} {
			got, err := digest(n)
			if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				rt.Fatalf("with %d hashers: %s, %v; the walk alone: %s, %v", n, got, err, want, wantErr)
			}
		}
	})
}

// TestDigestFilesHashersAgree: DigestFiles's sums taken several at once
// equal those taken one by one, and the digest of a large artifact is the
// one Verify reads back from its Write.
func TestDigestFilesHashersAgree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var data [][]byte
		for i := range rapid.IntRange(0, 30).Draw(rt, "files") {
			b := make([]byte, rapid.IntRange(0, 200<<10).Draw(rt, "size"))
			for j := range b {
				b[j] = byte(i*7 + j)
			}
			data = append(data, b)
		}
		one := tree.SumAll(data, 1)
		for _, n := range []int{2, 3, maxHashers} {
			if got := tree.SumAll(data, n); !slices.Equal(got, one) {
				rt.Fatalf("with %d hashers the sums differ from one by one", n)
			}
		}
	})
	l := genLayout(t)
	files := Files{}
	for i := range 24 {
		files[fmt.Sprintf("d%d/f%02d", i%3, i)] = bytes.Repeat([]byte{byte(i)}, 100<<10+i)
	}
	mustWrite(t, l, 1, files)
	d, err := digestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(context.Background(), 1, d, nil); err != nil {
		t.Fatalf("the digest of %d files, 2.4 MiB: %v", len(files), err)
	}
}
