//go:build unix

package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"pgregory.net/rapid"
)

// verifyAccidents are what TestVerifyWithFilesAgrees does to a written
// directory before both verifications; "none" does nothing.
var verifyAccidents = []string{"none", "flip", "truncate", "grow", "add-file", "add-dir", "remove", "rename", "mode", "dir-mode", "setuid", "symlink", "hard-link",
	"fifo", "setgid-dir", "outside-link", "swap", "dir-symlink"}

// TestVerifyWithFilesAgrees: Verify with files of a directory against the files a
// Write wrote there, after a random accident to it (or none), agrees with
// Verify against their digest: both match an intact directory, both
// refuse with a NameError what a write would refuse, and both report a
// mismatch for anything else, under Link too. A match under Link tells
// the Linker of the directory with the files' hashes: a Write of the
// same files links them all.
func TestVerifyWithFilesAgrees(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "verify-files-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		l := Layout[int64]{Root: filepath.Join(dir, "root"), Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: true}
		if rapid.Bool().Draw(t, "link") {
			l.Link = new(testLinker)
		}
		names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b.txt", "sub/c", "sub/deep/d", "x/y"}), 1, 5, rapid.ID).Draw(t, "names")
		files := Files{}
		for _, n := range names {
			files[n] = rapid.SliceOfN(rapid.Byte(), 1, 300_000).Draw(t, "bytes of "+n)
		}
		if _, err := l.Write(1, files); err != nil {
			t.Fatal(err)
		}
		want, err := l.DigestFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		// A fresh Linker, as in a process that did not write the directory.
		if l.Link != nil {
			l.Link = new(testLinker)
		}
		name := rapid.SampledFrom(slices.Sorted(maps.Keys(files))).Draw(t, "file")
		f := filepath.Join(l.Dir(1), filepath.FromSlash(name))
		kind := rapid.SampledFrom(verifyAccidents).Draw(t, "accident")
		makeWritable := func() {
			if err := os.Chmod(f, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var aerr error
		switch kind {
		case "none":
		case "flip":
			makeWritable()
			data := slices.Clone(files[name])
			data[rapid.IntRange(0, len(data)-1).Draw(t, "byte")] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
			aerr = os.WriteFile(f, data, 0)
		case "truncate":
			makeWritable()
			aerr = os.Truncate(f, int64(rapid.IntRange(0, len(files[name])-1).Draw(t, "size")))
		case "grow":
			makeWritable()
			aerr = os.WriteFile(f, append(slices.Clone(files[name]), 'x'), 0)
		case "add-file":
			aerr = os.WriteFile(filepath.Join(filepath.Dir(f), "added"), []byte("x"), l.filePerm())
		case "add-dir":
			aerr = os.Mkdir(filepath.Join(filepath.Dir(f), "added"), 0o755)
		case "remove":
			aerr = os.Remove(f)
		case "rename":
			aerr = os.Rename(f, filepath.Join(filepath.Dir(f), path.Base(name)+"-renamed"))
		case "mode":
			aerr = os.Chmod(f, 0o600)
		case "dir-mode":
			aerr = os.Chmod(filepath.Dir(f), 0o700)
		case "setuid":
			aerr = os.Chmod(f, 0o755|fs.ModeSetuid)
		case "symlink":
			aerr = errors.Join(os.Remove(f), os.Symlink(".", f))
		case "hard-link":
			aerr = os.Link(f, filepath.Join(filepath.Dir(f), "linked"))
		case "fifo":
			aerr = errors.Join(os.Remove(f), syscall.Mkfifo(f, 0o644))
		case "setgid-dir":
			aerr = os.Chmod(filepath.Dir(f), 0o755|fs.ModeSetgid)
		case "outside-link": // another link to the file, out of the tree
			aerr = os.Link(f, filepath.Join(dir, "outside"))
		case "swap": // two files trade places
			other := rapid.SampledFrom(slices.Sorted(maps.Keys(files))).Draw(t, "other")
			g := filepath.Join(l.Dir(1), filepath.FromSlash(other))
			if other != name {
				tmp := filepath.Join(dir, "swap")
				aerr = errors.Join(os.Rename(f, tmp), os.Rename(g, f), os.Rename(tmp, g))
			}
		case "dir-symlink": // the file's directory, a link to itself moved
			p := filepath.Dir(f)
			if p == l.Dir(1) {
				p = f
			}
			aerr = errors.Join(os.Rename(p, p+"-real"), os.Symlink(filepath.Base(p)+"-real", p))
		}
		if aerr != nil {
			t.Fatal(aerr)
		}

		byDigest := l.Verify(ctx, 1, want, nil)
		if l.Link != nil {
			l.Link = new(testLinker)
		}
		byFiles := l.Verify(ctx, 1, want, files)
		_, nameA := errors.AsType[*NameError](byDigest)
		_, nameB := errors.AsType[*NameError](byFiles)
		if (byDigest == nil) != (byFiles == nil) || nameA != nameB || errors.Is(byDigest, ErrDigestMismatch) != errors.Is(byFiles, ErrDigestMismatch) {
			t.Fatalf("after %s of %s: Verify = %v, Verify with files = %v", kind, name, byDigest, byFiles)
		}
		if kind == "none" && byFiles != nil {
			t.Fatalf("Verify with files of an intact directory: %v", byFiles)
		}
		if byFiles != nil && !nameB && !errors.Is(byFiles, ErrDigestMismatch) {
			t.Fatalf("after %s: Verify with files = %v, want a NameError or a mismatch", kind, byFiles)
		}
		if byFiles == nil && l.Link != nil {
			if _, err := l.Write(2, files); err != nil {
				t.Fatal(err)
			}
			if n, _, _ := l.Link.(*testLinker).linked("gen-2"); n != len(files) {
				t.Fatalf("a Write of the files Verify with files matched linked %d of %d", n, len(files))
			}
		}
	})
	l := genLayout(t)
	files := Files{"f": []byte("x")}
	mustWrite(t, l, 1, files)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := l.Verify(cctx, 1, Digest{}, files); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with files with an ended context: %v", err)
	}
	if err := l.Verify(ctx, 2, Digest{}, files); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Verify with files of a missing directory: %v", err)
	}
	if err := l.Verify(ctx, 1, Digest{}, Files{"../x": nil}); !errors.As(err, new(*NameError)) {
		t.Fatalf("Verify with files of a refused name: %v", err)
	}
}
