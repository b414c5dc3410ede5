//go:build unix

package dirlife

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
	"leasekit.dev/internal/testkit/dirtree"
	"pgregory.net/rapid"
)

// corruptInPlace rewrites the file name under dir with data of the same
// size, keeping its inode and its mode, as an accident would.
func corruptInPlace(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	dirtree.Overwrite(t, filepath.Join(dir, filepath.FromSlash(name)), data)
}

// A directory Verify finds corrupted is Gone from the Linker, even one
// this process wrote: no later write links from it.
func TestVerifyMismatchIsGone(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{"f": []byte("good content"), "g": []byte("other")}
	dir1, want := writeDigested(t, l, 1, files)
	corruptInPlace(t, dir1, "f", []byte("BAD! content"))
	if err := l.Verify(context.Background(), 1, want, nil); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("Verify of a corrupted directory: %v, want ErrDigestMismatch", err)
	}
	if _, _, ok := l.Link.(*testLinker).linked("gen-1"); ok {
		t.Fatal("the Linker still holds a directory Verify found corrupted")
	}
	dir2 := mustWrite(t, l, 2, files)
	if got := readTree(t, dir2); !equalFiles(got, files) {
		t.Fatalf("a write after a failed Verify published %q", got)
	}
	if err := l.Verify(context.Background(), 2, want, nil); err != nil {
		t.Fatal(err)
	}
}

// A source written in place since it was found (same inode, size and
// mode: an accident the read-only bits did not stop) is not linked, whether
// its modification time moved on or was put back as it was (cp -p, rsync
// -t, a coarse clock): its change time, which no call sets back, tells. The
// next write of the original content publishes that content, under the
// digest of what is on disk, and still links the unchanged file.
func TestLinkSkipsASourceWrittenInPlace(t *testing.T) {
	for _, restore := range []bool{false, true} {
		t.Run(fmt.Sprintf("mtime restored=%v", restore), func(t *testing.T) {
			l := genLayout(t)
			l.Link = new(testLinker)
			files := Files{"f": []byte("good content"), "g": []byte("other")}
			dir1 := mustWrite(t, l, 1, files)
			p := filepath.Join(dir1, "f")
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			corruptInPlace(t, dir1, "f", []byte("BAD! content"))
			mtime := fi.ModTime()
			if !restore {
				mtime = mtime.Add(time.Second)
			}
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			dir2 := mustWrite(t, l, 2, files)
			if got := readTree(t, dir2); !equalFiles(got, files) {
				t.Fatalf("a write after a source changed in place published %q", got)
			}
			want, err := l.DigestFiles(files)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Verify(context.Background(), 2, want, nil); err != nil {
				t.Fatal(err)
			}
			if same := sameInode(t, filepath.Join(dir2, "f"), p); same {
				t.Fatal("the file was linked to a source written in place since it was found")
			}
			if !sameInode(t, filepath.Join(dir2, "g"), filepath.Join(dir1, "g")) {
				t.Fatal("the unchanged source was not linked")
			}
		})
	}
}

// A source whose mode changed since it was found is not linked; the
// file is written instead, with its own content and mode.
func TestLinkSkipsASourceChmoddedSinceFound(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{"f": []byte("content")}
	dir1 := mustWrite(t, l, 1, files)
	if err := os.Chmod(filepath.Join(dir1, "f"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := mustWrite(t, l, 2, files)
	i1, _, _ := stat(t, dir1, "f")
	i2, n, mode := stat(t, dir2, "f")
	if i1 == i2 || n != 1 || mode != 0o444 {
		t.Fatalf("inodes %d and %d, %d links, mode %v: want a file of its own, 0o444", i1, i2, n, mode)
	}
}

// CopyFS under Link links every unchanged file, whatever its size about
// the buffer a small file is held in (empty, exactly linkBufSize, one byte
// more, several times more), and writes a file whose content matches but
// whose mode differs.
func TestCopyFSLinksAtTheBufferBounds(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	sizes := map[string]int{"empty": 0, "one": 1, "buf": linkBufSize, "buf+1": linkBufSize + 1, "big": 3*linkBufSize + 7}
	fsys := fstest.MapFS{}
	for name, n := range sizes {
		data := bytes.Repeat([]byte{byte(len(name))}, n)
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		fsys["x/"+name] = &fstest.MapFile{Data: data, Mode: 0o755}
	}
	ctx := context.Background()
	if _, err := l.CopyFS(ctx, 1, fsys, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	fsys["x/one"] = &fstest.MapFile{Data: []byte{9}, Mode: 0o755}
	w, err := l.CopyFS(ctx, 2, fsys, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Linked != 2*len(sizes)-1 {
		t.Fatalf("linked %d files, want %d", w.Linked, 2*len(sizes)-1)
	}
	dir1, dir2 := l.Dir(1), l.Dir(2)
	for name := range fsys {
		if fsys[name].Mode.IsDir() || name == "x" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir2, name))
		if err != nil || !bytes.Equal(got, fsys[name].Data) {
			t.Fatalf("%s: %d bytes, %v; want %d", name, len(got), err, len(fsys[name].Data))
		}
		i1, _, _ := stat(t, dir1, name)
		i2, _, mode := stat(t, dir2, name)
		if want := readOnlyPerm(fsys[name].Mode); mode != want {
			t.Fatalf("%s: mode %v, want %v", name, mode, want)
		}
		if (i1 == i2) != (name != "x/one") {
			t.Fatalf("%s: inodes %d and %d", name, i1, i2)
		}
	}
	// The same content with another mode is another file.
	if i, _, _ := stat(t, dir2, "empty"); i == func() uint64 { j, _, _ := stat(t, dir2, "x/empty"); return j }() {
		t.Fatal("files of one content and two modes share an inode")
	}
	if err := l.Verify(ctx, 2, w.Digest, nil); err != nil {
		t.Fatal(err)
	}
}

// A call that fails on its Root tells the Linker nothing; writes on a
// good Root then link through it.
func TestLinkerToldNothingByAFailedCall(t *testing.T) {
	x := new(testLinker)
	bad := Layout[int64]{Root: "", Codec: IntCodec[int64]{Prefix: "gen-"}, Link: x}
	if _, err := bad.Write(1, Files{"f": []byte("x")}); err == nil {
		t.Fatal("a Write to the empty Root succeeded")
	}
	if held := x.held(); len(held) != 0 {
		t.Fatalf("a failed Write told the Linker of %v", held)
	}
	l := genLayout(t)
	l.Link = x
	mustWrite(t, l, 1, Files{"f": []byte("x")})
	mustWrite(t, l, 2, Files{"f": []byte("x")})
	if n, _, _ := x.linked("gen-2"); n != 1 {
		t.Fatalf("a Write after a failed one on another Root linked %d files, want 1", n)
	}
}

// Writes that link run while Prune removes the directories they link
// from, and Verify claims others: every published directory holds its
// files, and Verify agrees.
func TestLinkWhilePruning(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	version := func(id int64) Files {
		files := Files{}
		for i := range 6 {
			files[fmt.Sprintf("d%d/f%d", i%2, i)] = bytes.Repeat([]byte{byte(i)}, 100+i)
		}
		files["changed"] = fmt.Appendf(nil, "version %d", id)
		return files
	}
	mustWrite(t, l, 0, version(0))
	const writers, each = 3, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				id := int64(1 + g*each + i)
				if _, err := l.Write(id, version(id)); err != nil {
					errs <- err
					return
				}
				want, _ := l.DigestFiles(version(id))
				if err := l.Verify(context.Background(), id, want, nil); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs <- fmt.Errorf("verify %d: %w", id, err)
				}
				if err := l.Prune(id); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ids, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got := readTree(t, l.Dir(id)); !equalFiles(got, version(id)) {
			t.Fatalf("gen-%d holds %q", id, got)
		}
	}
}

// A Verify whose ctx ends while files are hashed aside returns ctx's
// error only once every hasher has returned: while one is still in a
// read, Verify waits for it.
func TestVerifyCancelledWhileHashing(t *testing.T) {
	l := genLayout(t)
	files := Files{}
	for i := range 40 {
		files[fmt.Sprintf("f%02d", i)] = bytes.Repeat([]byte{byte(i)}, 3*tree.BufSize)
	}
	mustWrite(t, l, 1, files)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		held, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		l.faults = func(step, name string) error {
			if step == stepHash && name == "gen-1/f05" {
				once.Do(func() {
					cancel()
					close(held)
					<-release
				})
			}
			return nil
		}
		done := make(chan error, 1)
		go func() {
			h, err := l.openRoot("verify", false, rootlock.Shared)
			if err != nil {
				done <- err
				return
			}
			defer h.release()
			_, err = l.digestDir(ctx, h, "gen-1", maxHashers, nil)
			done <- err
		}()
		<-held
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the walk returned (%v) while a hasher was still in its read", err)
		default:
		}
		close(release)
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the walk: %v, want context.Canceled", err)
		}
	})
}

// Verify's walk hashing files aside and the walk hashing each in turn
// collect the same files for the Linker, in the same order.
func TestVerifyFoundAgreesWithHashers(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/f%02d", i%3, i)] = bytes.Repeat([]byte{byte(i % 4)}, i*tree.BufSize/7)
	}
	mustWrite(t, l, 1, files)
	mustWrite(t, l, 2, files)
	found := func(hashers int) []File {
		h, err := l.openRoot("verify", false, rootlock.Shared)
		if err != nil {
			t.Fatal(err)
		}
		defer h.release()
		var found []File
		if _, err := l.digestDir(context.Background(), h, "gen-2", hashers, &found); err != nil {
			t.Fatal(err)
		}
		return found
	}
	want := found(0)
	if len(want) != len(files) {
		t.Fatalf("the walk found %d files, want %d", len(want), len(files))
	}
	for _, n := range []int{2, maxHashers} {
		if got := found(n); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("with %d hashers found %v, the walk alone %v", n, got, want)
		}
	}
}

// A write that links from a directory a rewrite replaces meanwhile, with
// a file of the same name, size and mode, publishes its own content.
func TestLinkFromADirectoryRewrittenMeanwhile(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	old := Files{"f": []byte("old content"), "g": []byte("kept")}
	mustWrite(t, l, 1, old)
	rewriter := l
	var once sync.Once
	l.faults = func(step, name string) error {
		if step == stepLink && filepath.Base(name) == "f" {
			once.Do(func() { mustWrite(t, rewriter, 1, Files{"f": []byte("new content"), "g": []byte("kept")}) })
		}
		return nil
	}
	dir2 := mustWrite(t, l, 2, old)
	if got := readTree(t, dir2); !equalFiles(got, old) {
		t.Fatalf("gen-2 holds %q", got)
	}
	if got := readTree(t, l.Dir(1)); string(got["f"]) != "new content" {
		t.Fatalf("the rewrite did not run: gen-1 holds %q", got)
	}
	want, _ := l.DigestFiles(old)
	if err := l.Verify(context.Background(), 2, want, nil); err != nil {
		t.Fatal(err)
	}
}

// Under a setgid Root, whose bit every staged directory takes, Write and
// CopyFS link unchanged files as under any other, and Verify agrees.
func TestLinkUnderSetgidRoot(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	if err := os.Mkdir(l.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Root, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	files := Files{"a": []byte("same"), "d/b": []byte("other")}
	dir1 := mustWrite(t, l, 1, files)
	fsys := fstest.MapFS{"a": {Data: files["a"], Mode: 0o644}, "d/b": {Data: files["d/b"], Mode: 0o644}}
	w, err := l.CopyFS(context.Background(), 2, fsys, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Linked != 2 {
		t.Fatalf("CopyFS linked %d files under a setgid Root, want 2", w.Linked)
	}
	for _, name := range []string{"a", "d/b"} {
		i1, _, _ := stat(t, dir1, name)
		if i2, _, _ := stat(t, w.Dir, name); i1 != i2 {
			t.Fatalf("%s: inodes %d and %d", name, i1, i2)
		}
	}
	if err := l.Verify(context.Background(), 2, w.Digest, nil); err != nil {
		t.Fatal(err)
	}
}

// sameInode reports whether the files at a and b are one inode.
func sameInode(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Lstat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Lstat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

// TestVerifyCancelledTellsNothing: a Verify that ctx ends before it can
// tell a match from a mismatch tells Link nothing: the directory stays a
// source, found as it was.
func TestVerifyCancelledTellsNothing(t *testing.T) {
	l := genLayout(t)
	x := new(testLinker)
	l.Link = x
	mustWrite(t, l, 1, Files{"f": []byte("one")})
	before := x.held()["gen-1"]
	if len(before) != 1 {
		t.Fatalf("the write told Link of %v, want gen-1's one file", before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, files := range []Files{nil, {"f": []byte("two")}} { // want: a mismatch, were it read
		if err := l.Verify(ctx, 1, Digest{}, files); !errors.Is(err, context.Canceled) {
			t.Fatalf("Verify under an ended ctx: %v, want context.Canceled", err)
		}
		if got := x.held()["gen-1"]; !slices.Equal(got, before) {
			t.Fatalf("after a Verify that ctx ended, Link holds %v for gen-1, want %v as before", got, before)
		}
	}
}

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
	dir1, want := writeDigested(t, l, 1, files)
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
	// after the swap, and once it is open, the swap is undone. A swap is
	// two renames, between which gen-1/sub is absent, so each waits until
	// no hasher can open a file across it: the first until the other
	// files of the first hashers' wave are open (the hook runs once its
	// file is), the second until every a file is.
	hashers := min(runtime.GOMAXPROCS(0), maxHashers)
	opened := map[string]chan struct{}{}
	for i := range maxHashers {
		opened["gen-1/sub/a"+string(rune('1'+i))] = make(chan struct{})
	}
	swapped := make(chan struct{})
	l.faults = func(step, name string) error {
		if step != stepHash {
			return nil
		}
		if ch, ok := opened[name]; ok {
			close(ch)
		}
		switch {
		case name == "gen-1/sub/a1":
			for i := 1; i < hashers; i++ {
				<-opened["gen-1/sub/a"+string(rune('1'+i))]
			}
			swap(held, good)
			close(swapped)
		case name == "gen-1/sub/c":
			for _, ch := range opened {
				<-ch
			}
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
	dir2 := mustWrite(t, l, 2, files)
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
	dir1, want := writeDigested(t, l, 1, files)
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
