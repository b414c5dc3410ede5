//go:build unix

package dirlife

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife/internal/sys"
)

// stat returns the inode, link count and mode of file name under dir.
func stat(t *testing.T, dir, name string) (ino, nlink uint64, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return uint64(st.Ino), uint64(st.Nlink), fi.Mode()
}

// Under Link, a Write links the files of a directory the Linker was told
// of with the same content and mode, writes the others, and publishes every
// file read-only; the digest is the one DigestFiles gives under Link.
func TestWriteLinksUnchanged(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	one := Files{"a": []byte("same"), "sub/b": []byte("old"), "c": bytes.Repeat([]byte("x"), 3<<20)}
	two := Files{"a": []byte("same"), "sub/b": []byte("new"), "c": one["c"]}
	dir1 := mustWrite(t, l, 1, one)
	dir2 := mustWrite(t, l, 2, two)
	for _, name := range []string{"a", "c"} {
		i1, n, mode := stat(t, dir1, name)
		i2, _, _ := stat(t, dir2, name)
		if i1 != i2 || n != 2 || mode != 0o444 {
			t.Fatalf("%s: inodes %d and %d, %d links, mode %v: want one inode, 2 links, 0o444", name, i1, i2, n, mode)
		}
	}
	if i1, _, _ := stat(t, dir1, "sub/b"); i1 == func() uint64 { i, _, _ := stat(t, dir2, "sub/b"); return i }() {
		t.Fatal("a changed file shares its inode")
	}
	if files, bytes, ok := l.Link.(*testLinker).linked("gen-2"); !ok || files != 2 || bytes != int64(4+len(one["c"])) {
		t.Fatalf("Linked(gen-2) = %d files, %d bytes, %v", files, bytes, ok)
	}
	want, err := l.DigestFiles(two)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(context.Background(), 2, want, nil); err != nil {
		t.Fatalf("Verify of a linked directory with the digest DigestFiles gives under Link: %v", err)
	}
	// Removing one directory changes no other; a pruned directory is
	// linked no more.
	if err := l.Prune(2); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir2); !equalFiles(got, two) {
		t.Fatal("pruning gen-1 changed gen-2")
	}
	if _, _, ok := l.Link.(*testLinker).linked("gen-1"); ok {
		t.Fatal("the Linker still holds a pruned directory")
	}
}

func equalFiles(a, b Files) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// Without Link, nothing is linked and files keep their write bits.
func TestWriteWithoutLinkSharesNothing(t *testing.T) {
	l := genLayout(t)
	files := Files{"a": []byte("same")}
	for id := int64(1); id <= 2; id++ {
		dir := mustWrite(t, l, id, files)
		if _, n, mode := stat(t, dir, "a"); n != 1 || mode&0o200 == 0 {
			t.Fatalf("gen-%d/a: %d links, mode %v", id, n, mode)
		}
	}
}

// CopyFS under Link links a small unchanged file before writing it, and
// replaces a large one, written as it is hashed, by a link; its Written
// counts both.
func TestCopyFSLinksUnchanged(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	big := bytes.Repeat([]byte("y"), 3<<20)
	fsys := fstest.MapFS{"small": {Data: []byte("s"), Mode: 0o644}, "big": {Data: big, Mode: 0o600}, "x": {Data: []byte("1"), Mode: 0o755}}
	ctx := context.Background()
	w1, err := l.CopyFS(ctx, 1, fsys, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Linked != 0 || w1.Wrote != w1.Bytes || w1.Bytes != int64(len(big)+2) {
		t.Fatalf("first copy: %+v", w1)
	}
	fsys["x"] = &fstest.MapFile{Data: []byte("2"), Mode: 0o755}
	w2, err := l.CopyFS(ctx, 2, fsys, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w2.Linked != 2 || w2.Wrote != int64(len(big)+1) {
		t.Fatalf("second copy: %+v, want 2 linked, the big file and x written", w2)
	}
	for name, mode := range map[string]fs.FileMode{"small": 0o444, "big": 0o400, "x": 0o555} {
		i1, _, m := stat(t, w1.Dir, name)
		i2, _, _ := stat(t, w2.Dir, name)
		if m != mode || (i1 == i2) != (name != "x") {
			t.Fatalf("%s: mode %v, inodes %d and %d", name, m, i1, i2)
		}
	}
}

// A link that fails is written instead, and the write succeeds.
func TestLinkFailureWrites(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{"a": []byte("same")}
	if _, err := l.Write(1, files); err != nil {
		t.Fatal(err)
	}
	l.faults = func(step, name string) error {
		if step == stepLink {
			return syscall.EMLINK
		}
		return nil
	}
	dir := mustWrite(t, l, 2, files)
	if _, n, _ := stat(t, dir, "a"); n != 1 {
		t.Fatalf("gen-2/a has %d links after a failed link", n)
	}
	// The file written in its place is the one linked to next: an inode
	// with too many links is left behind.
	l.faults = nil
	dir3 := mustWrite(t, l, 3, files)
	i2, _, _ := stat(t, dir, "a")
	if i3, _, _ := stat(t, dir3, "a"); i3 != i2 {
		t.Fatalf("gen-3/a is inode %d, want gen-2/a's %d", i3, i2)
	}
}

// A directory Recorded lists is linked from only once Verify found it
// intact.
func TestLinkOnlyFromVerified(t *testing.T) {
	l := genLayout(t)
	l.Link, l.RecordDigest = new(testLinker), true
	files := Files{"a": []byte("same")}
	if _, err := l.Write(1, files); err != nil {
		t.Fatal(err)
	}
	l.Link = new(testLinker) // a new process
	kept, recorded, err := l.Recorded()
	if err != nil || !recorded {
		t.Skipf("no digest records here: %v", err)
	}
	dir := mustWrite(t, l, 2, files)
	if _, n, _ := stat(t, dir, "a"); n != 1 {
		t.Fatal("a write linked from a kept directory not verified")
	}
	if err := l.Verify(context.Background(), 1, kept[1], nil); err != nil {
		t.Fatal(err)
	}
	dir, err = l.Write(3, files)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, _ := stat(t, dir, "a"); n != 2 {
		t.Fatalf("gen-3/a has %d links, want a link to verified gen-1's", n)
	}
}

// A Linker cannot have the layout link what the layout did not find as it
// is: a File found under another Root (a Linker shared by two), or one
// made outside the layout, changed (its Path, its Sum) or offered as
// another directory's, each claiming the content wanted, is no source,
// nor is a File as the layout found it of another content or mode than
// the file wanted, and the write writes the file. Only a File as the
// layout found it, of the content and mode wanted, is linked.
func TestLinkerCannotForgeASource(t *testing.T) {
	x := new(testLinker)
	l := genLayout(t)
	l.Link = x
	l.faults = tickClock(l.Root)
	mustWrite(t, l, 1, Files{"a": []byte("good"), "b": []byte("evil")})
	mustWrite(t, l, 2, Files{"a": []byte("bad!")}) // links nothing of gen-1
	// gen-3/a holds a's bytes under another mode.
	if _, err := l.CopyFS(context.Background(), 3, treeFS(Tree{"a": {Data: []byte("good"), Mode: 0o755}}), StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	other := genLayout(t)
	other.Link = new(testLinker)
	mustWrite(t, other, 1, Files{"a": []byte("good")})
	found := x.held()
	a, b, c := found["gen-1"][0], found["gen-1"][1], found["gen-3"][0]
	if a.Path != "a" || b.Path != "b" || !a.known || !b.known {
		t.Fatalf("gen-1 was found as %+v: want a and b, their bytes known (the filesystem's clock read)", found["gen-1"])
	}
	forged := func(f File) File { // claims a's content
		f.Sum, f.Size, f.Perm = a.Sum, a.Size, a.Perm
		return f
	}
	withPath := func(f File, p string) File { f.Path = p; return f }
	cases := []struct {
		name     string
		dir      string
		from     File
		linkable bool
	}{
		{"another root", "gen-1", other.Link.(*testLinker).held()["gen-1"][0], false},
		{"made outside", "gen-1", forged(File{Path: "b"}), false},
		{"zero", "gen-1", File{}, false},
		{"changed Path", "gen-1", withPath(a, "b"), false},
		{"changed Sum", "gen-1", forged(b), false},
		{"another directory", "gen-2", a, false},
		{"another content, as found", "gen-1", b, false},
		{"another mode, as found", "gen-3", c, false},
		{"as found", "gen-1", a, true}, // last: its link moves a's change time
	}
	want := Files{"a": []byte("good")}
	for i, c := range cases {
		f := &forger{dir: c.dir, from: c.from}
		l.Link = f
		mustWrite(t, l, int64(10+i), want)
		dir := l.Dir(int64(10 + i))
		if f.asked == 0 {
			t.Fatalf("%s: the write asked the Linker for no source", c.name)
		}
		if got := readTree(t, dir); !equalFiles(got, want) {
			t.Fatalf("%s: the write published %q", c.name, got)
		}
		if _, n, _ := stat(t, dir, "a"); (n == 2) != c.linkable {
			t.Fatalf("%s: the written file has %d links", c.name, n)
		}
	}
}

// A forger offers one source for every file, whatever it is asked.
type forger struct {
	dir   string
	from  File
	asked int
}

func (f *forger) Source(File) (string, File, bool) { f.asked++; return f.dir, f.from, true }
func (f *forger) Found(string, []File)             {}
func (f *forger) Gone(string)                      {}

// Under Link, a WriteStream's files lose their write bits too, however the
// fill made them, and the digest is of the modes on disk.
func TestWriteStreamReadOnlyUnderLink(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	w, err := l.WriteStream(context.Background(), 1, func(_ context.Context, dir *os.Root) error {
		return dir.WriteFile("a", []byte("same"), 0o664)
	}, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, mode := stat(t, w.Dir, "a"); mode != 0o444 {
		t.Fatalf("a: mode %v, want 0o444", mode)
	}
	want, err := l.DigestFiles(Files{"a": []byte("same")})
	if err != nil {
		t.Fatal(err)
	}
	if w.Digest != want || w.Bytes != 4 || w.Wrote != 4 {
		t.Fatalf("Written %+v, want the digest %v of a read-only file", w, want)
	}
	// A file the fill links in writable is refused, as without Link.
	_, err = l.WriteStream(context.Background(), 2, func(_ context.Context, dir *os.Root) error {
		if err := dir.WriteFile("a", nil, 0o644); err != nil {
			return err
		}
		return dir.Link("a", "b")
	}, StreamOptions{})
	var ne *NameError
	if !errors.As(err, &ne) {
		t.Fatalf("a writable file with two links: err %v, want a *NameError", err)
	}
}

// A File of a directory Prune removed since, offered by a Linker that
// kept it, is no source for the bytes it had: a directory of the same name
// written since, its file of the same size but other bytes, is read, and
// the write writes the file.
func TestLinkerCannotOfferAPrunedSource(t *testing.T) {
	x := new(testLinker)
	l := genLayout(t)
	l.Link = x
	good := Files{"a": []byte("good")}
	mustWrite(t, l, 1, good)
	old := x.held()["gen-1"][0]
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, l, 1, Files{"a": []byte("evil")})
	f := &forger{dir: "gen-1", from: old}
	l.Link = f
	mustWrite(t, l, 2, good)
	dir := l.Dir(2)
	if got := readTree(t, dir); !equalFiles(got, good) || f.asked == 0 {
		t.Fatalf("the write published %q, asking the Linker %d times", got, f.asked)
	}
	if _, n, _ := stat(t, dir, "a"); n != 1 {
		t.Fatalf("the written file has %d links", n)
	}
}

// tickClock is a fault seam that lets a walk read the filesystem's clock
// only once it has ticked past its reading when the walk began, so that
// every file changed before the walk is in an earlier tick than the
// walk's clock however coarse the clock and fast the machine: the walk
// then knows the bytes it wrote or read by their stamps.
func tickClock(root string) func(step, name string) error {
	return func(step, name string) error {
		if step != stepClock {
			return nil
		}
		d, err := os.Open(filepath.Join(root, name))
		if err != nil {
			return err // the clock unknown: the test sees no file known
		}
		defer d.Close()
		start, ok := sys.FSClock(d)
		for ok {
			var now int64
			if now, ok = sys.FSClock(d); now > start {
				break
			}
			runtime.Gosched()
		}
		return nil
	}
}
