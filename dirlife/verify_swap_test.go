//go:build unix

package dirlife

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"leasekit.dev/dirlife/internal/sys"
)

// The stamp Verify keeps of a file, by which a later write links it
// unread, is that of the inode whose bytes it read: a directory of the
// tree swapped for another between the walk's stat of a file and the read
// of its bytes (which a walk that hashes several files at once opens by
// path) and swapped back after, leaves the walk with the stamp of one
// inode and the bytes of another. A write then links that file only once
// it has read and compared it, and publishes the bytes it was given.
func TestVerifyStampIsOfTheBytesRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // Verify hashes files aside
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{"sub/c": []byte("good")}
	for i := range maxHashers {
		files["sub/a"+string(rune('1'+i))] = []byte("same")
	}
	dir1, err := l.Write(1, files)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.DigestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	// gen-1/sub/c becomes another inode, with other bytes; elsewhere on
	// the filesystem, a copy of gen-1/sub holds the published bytes.
	tmp := t.TempDir()
	evil := filepath.Join(tmp, "evil")
	if err := os.WriteFile(evil, []byte("EVIL"), 0o444); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir1, "sub")
	if err := os.Rename(evil, filepath.Join(sub, "c")); err != nil {
		t.Fatal(err)
	}
	good, held := filepath.Join(tmp, "good"), filepath.Join(tmp, "held")
	if err := os.Mkdir(good, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(good, filepath.Base(name)), data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	// The filesystem's clock past the evil file's change time, so that a
	// walk that stamps it may know its bytes by its stamp.
	fi, err := os.Lstat(filepath.Join(sub, "c"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for ctime := sys.StampOf(fi).Ctime; ; {
		now, ok := sys.FSClock(d)
		if !ok {
			d.Close()
			t.Skip("the filesystem's clock cannot be read")
		}
		if now > ctime {
			break
		}
	}
	d.Close()
	swap := func(out, in string) {
		if err := os.Rename(sub, out); err != nil {
			t.Error(err)
		}
		if err := os.Rename(in, sub); err != nil {
			t.Error(err)
		}
	}
	// The walk stats gen-1/sub's files through its descriptor of the
	// directory. Once it hashes sub/a1, gen-1/sub is swapped for the good
	// copy; sub/c is opened only once a hasher of an a file is done, so
	// after the swap, and once it is open, the swap is undone.
	swapped := make(chan struct{})
	var once sync.Once
	l.faults = func(step, name string) error {
		if step != stepHash {
			return nil
		}
		switch {
		case name == "gen-1/sub/a1":
			once.Do(func() { swap(held, good); close(swapped) })
		case name == "gen-1/sub/c":
			swap(good, held)
		case strings.HasPrefix(name, "gen-1/sub/a"):
			<-swapped
		}
		return nil
	}
	if err := l.Verify(context.Background(), 1, want, nil); err != nil {
		t.Fatalf("Verify read the good copy of gen-1/sub/c and found %v", err)
	}
	l.faults = nil
	if got, err := os.ReadFile(filepath.Join(sub, "c")); err != nil || string(got) != "EVIL" {
		t.Fatalf("gen-1/sub/c holds %q (%v), want the evil file back", got, err)
	}
	dir2, err := l.Write(2, files)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir2, "sub", "c")); err != nil || !bytes.Equal(got, files["sub/c"]) {
		t.Fatalf("gen-2/sub/c holds %q (%v), want %q: linked unread from a stamp of bytes not read", got, err, files["sub/c"])
	}
}

// A file Verify found of one size, that grew to the published content
// while it was read, and was cut back to its first size after, is a
// source whose bytes differ: a CopyFS of a file past linkBufSize, written
// and then replaced by a link to a source whose bytes it compares with
// its own, falls back to writing, and publishes the content it was given
// (neither the shorter source nor a failure).
func TestLinkComparesWholeFilesOfAGrownSource(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	content := bytes.Repeat([]byte("long content;"), linkBufSize/8) // past linkBufSize
	short := content[:len(content)/2]
	files := Files{"f": content}
	dir1, err := l.Write(1, files)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.DigestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir1, "f")
	setTo := func(data []byte) {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(p, data, 0); err != nil {
			t.Error(err)
		}
		if err := os.Chmod(p, 0o444); err != nil {
			t.Error(err)
		}
	}
	setTo(short)
	// Verify stamps f short; once it has opened it, f grows back, and
	// Verify reads the whole content.
	l.faults = func(step, name string) error {
		if step == stepHash && name == "gen-1/f" {
			setTo(content)
		}
		return nil
	}
	if err := l.Verify(context.Background(), 1, want, nil); err != nil {
		t.Fatalf("Verify read the whole content of gen-1/f and found %v", err)
	}
	l.faults = nil
	setTo(short)
	w, err := l.CopyFS(context.Background(), 2, treeFS(treeOf(files)), StreamOptions{})
	if err != nil {
		t.Fatalf("CopyFS with a shorter source of f: %v, want it written", err)
	}
	if got, err := os.ReadFile(filepath.Join(w.Dir, "f")); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("gen-2/f holds %d bytes (%v), want the %d given: linked to a source compared in part", len(got), err, len(content))
	}
}
