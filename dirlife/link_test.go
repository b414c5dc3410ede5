//go:build unix

package dirlife

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
	"pgregory.net/rapid"
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

// linkWant is what one file of a published directory must hold.
type linkWant struct {
	data []byte
	perm fs.FileMode
}

// A linkGen is a directory a link model published: what it must hold
// now (edits of a file shared by inode reach every directory holding it),
// and what it was published with, under its record's digest.
type linkGen struct {
	dir       string
	want      map[string]linkWant
	published map[string]linkWant
	digest    Digest
}

// TestLinkStampModel drives a Layout under Link through generations
// written by Write or CopyFS, each of which changes some files and keeps
// others (with the filesystem's clock read, or unknown), between edits of published files as a careless reader or tool
// makes them: a rewrite in place of the same or another size, with the
// modification time moved on or put back as it was, a chmod (kept, or put
// back), a touch, and a rename over the file of another file (new inode)
// stamped with the old one's time and mode; and Prune and Verify. After
// every step every file of every published directory holds what the model
// says (an edit in place reaches every directory sharing the inode, a
// rename over only its own); a directory just published holds exactly its
// content, under the digest its write returned; Verify agrees with the
// model; and the layout trusts, without reading, no file whose bytes are
// not those it found.
func TestLinkStampModel(t *testing.T) {
	tmp := t.TempDir()
	ctx := context.Background()
	names := []string{"a", "b", "d/c", "d/e"}
	big := bytes.Repeat([]byte("big!"), linkBufSize/4+1) // past linkBufSize: written, then replaced by a link
	rapid.Check(t, func(t *rapid.T) {
		base, err := os.MkdirTemp(tmp, "case")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		l := Layout[int64]{Root: filepath.Join(base, "root"), Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: true, Link: new(testLinker)}
		gens := map[int64]*linkGen{}
		var last map[string]linkWant // the content of the last publish
		next := int64(1)
		// Contents of 8 bytes (one size, for edits that keep it), one of
		// another size, the empty one, and, rarely, the big one.
		small := rapid.SampledFrom([][]byte{[]byte("content1"), []byte("content2"), []byte("content3"), []byte("longer content"), {}})
		content := rapid.Custom(func(t *rapid.T) []byte {
			if rapid.IntRange(0, 15).Draw(t, "big") == 0 {
				return big
			}
			return small.Draw(t, "small")
		})

		publishGen := func(t *rapid.T) {
			id := next
			next++
			useFS := rapid.Bool().Draw(t, "copyfs")
			files := map[string]linkWant{}
			for _, name := range names {
				w, ok := last[name]
				switch rapid.IntRange(0, 5).Draw(t, "change "+name) {
				case 0: // dropped or new
					ok = !ok
					w = linkWant{content.Draw(t, "content "+name), 0o644}
				case 1:
					w.data, ok = content.Draw(t, "content "+name), true
				}
				if !ok {
					continue
				}
				if w.perm == 0 {
					w.perm = 0o644
				}
				if useFS && rapid.IntRange(0, 4).Draw(t, "mode "+name) == 0 {
					w.perm = 0o755
				}
				if !useFS {
					w.perm = 0o644 // Write's only mode
				}
				files[name] = w
			}
			if len(files) == 0 {
				files["a"] = linkWant{[]byte("content1"), 0o644}
			}
			last = files
			var dir string
			var digest Digest
			if useFS {
				tree := Tree{}
				for name, w := range files {
					tree[name] = Entry{Data: w.data, Mode: w.perm}
				}
				w, err := l.CopyFS(ctx, id, treeFS(tree), StreamOptions{})
				if err != nil {
					t.Fatalf("CopyFS(%d): %v", id, err)
				}
				dir, digest = w.Dir, w.Digest
			} else {
				in := Files{}
				for name, w := range files {
					in[name] = w.data
				}
				if dir, err = l.Write(id, in); err != nil {
					t.Fatalf("Write(%d): %v", id, err)
				}
				if digest, err = l.DigestFiles(in); err != nil {
					t.Fatal(err)
				}
			}
			g := &linkGen{dir: dir, want: map[string]linkWant{}, published: map[string]linkWant{}, digest: digest}
			for name, w := range files {
				w.perm = readOnlyPerm(w.perm)
				g.want[name], g.published[name] = w, w
			}
			gens[id] = g
			// The record's digest is that of what is on disk.
			h, err := l.openRoot("verify", false, rootlock.Shared)
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.digestDir(ctx, h, filepath.Base(dir), 0, nil)
			h.release()
			if err != nil || got != digest {
				t.Fatalf("gen-%d: on disk the digest %v (%v), its write returned %v", id, got, err, digest)
			}
		}

		// pick returns a published file: its directory's ID and its name.
		pick := func(t *rapid.T) (int64, string) {
			ids := slices.Sorted(maps.Keys(gens))
			if len(ids) == 0 {
				t.Skip("nothing published")
			}
			id := rapid.SampledFrom(ids).Draw(t, "id")
			return id, rapid.SampledFrom(slices.Sorted(maps.Keys(gens[id].want))).Draw(t, "name")
		}
		// sharing returns every published file that is the inode p is.
		type genFile struct {
			id   int64
			name string
		}
		sharing := func(t *rapid.T, p string) []genFile {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			var out []genFile
			for id, g := range gens {
				for name := range g.want {
					gi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(name)))
					if err != nil {
						t.Fatal(err)
					}
					if os.SameFile(fi, gi) {
						out = append(out, genFile{id, name})
					}
				}
			}
			return out
		}
		setWant := func(files []genFile, set func(*linkWant)) {
			for _, f := range files {
				w := gens[f.id].want[f.name]
				set(&w)
				gens[f.id].want[f.name] = w
			}
		}

		edit := func(t *rapid.T) {
			id, name := pick(t)
			p := filepath.Join(gens[id].dir, filepath.FromSlash(name))
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			mtime := fi.ModTime()
			old := gens[id].want[name]
			shared := sharing(t, p)
			switch kind := rapid.SampledFrom([]string{"rewrite same size", "rewrite other size", "chmod", "chmod back", "touch", "rename over"}).Draw(t, "edit"); kind {
			case "rewrite same size", "rewrite other size":
				data := bytes.Repeat([]byte{'X'}, len(old.data))
				if kind == "rewrite other size" {
					data = append(data, 'Y')
				}
				if len(data) > 0 {
					data[0] = byte(rapid.IntRange('A', 'Z').Draw(t, "byte"))
				}
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, fi.Mode()); err != nil {
					t.Fatal(err)
				}
				if rapid.Bool().Draw(t, "restore mtime") {
					if err := os.Chtimes(p, mtime, mtime); err != nil {
						t.Fatal(err)
					}
				}
				setWant(shared, func(w *linkWant) { w.data = data })
			case "chmod", "chmod back":
				perm := rapid.SampledFrom([]fs.FileMode{0o400, 0o444, 0o555, 0o644}).Draw(t, "perm")
				if err := os.Chmod(p, perm); err != nil {
					t.Fatal(err)
				}
				if kind == "chmod back" {
					perm = fi.Mode().Perm()
					if err := os.Chmod(p, perm); err != nil {
						t.Fatal(err)
					}
				}
				setWant(shared, func(w *linkWant) { w.perm = perm })
			case "touch":
				later := mtime.Add(time.Duration(rapid.IntRange(-2, 2).Draw(t, "seconds")) * time.Second)
				if err := os.Chtimes(p, later, later); err != nil {
					t.Fatal(err)
				}
			case "rename over":
				data := content.Draw(t, "new content")
				tmp := p + ".new"
				if err := os.WriteFile(tmp, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(tmp, fi.Mode()); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(tmp, mtime, mtime); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, p); err != nil {
					t.Fatal(err)
				}
				w := gens[id].want[name]
				w.data = data
				gens[id].want[name] = w
			}
		}

		prune := func(t *rapid.T) {
			var keep []int64
			for _, id := range slices.Sorted(maps.Keys(gens)) {
				if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("drop %d", id)) != 0 {
					keep = append(keep, id)
				}
			}
			if err := l.Prune(keep...); err != nil {
				t.Fatalf("Prune(%v): %v", keep, err)
			}
			for id := range gens {
				if !slices.Contains(keep, id) {
					delete(gens, id)
				}
			}
		}

		verify := func(t *rapid.T) {
			ids := slices.Sorted(maps.Keys(gens))
			if len(ids) == 0 {
				t.Skip("nothing published")
			}
			id := rapid.SampledFrom(ids).Draw(t, "verify")
			g := gens[id]
			intact := maps.EqualFunc(g.want, g.published, func(a, b linkWant) bool { return a.perm == b.perm && bytes.Equal(a.data, b.data) })
			err := l.Verify(ctx, id, g.digest, nil)
			var ne *NameError
			switch {
			case intact && err != nil:
				t.Fatalf("Verify(%d) of an intact directory: %v", id, err)
			case !intact && !errors.Is(err, ErrDigestMismatch) && !errors.As(err, &ne):
				t.Fatalf("Verify(%d) of an edited directory: %v, want ErrDigestMismatch", id, err)
			}
		}

		// check holds every published directory to the model, and the
		// files the Linker holds to their bytes.
		check := func(t *rapid.T) {
			for id, g := range gens {
				got := readTree(t, g.dir)
				if len(got) != len(g.want) {
					t.Fatalf("gen-%d holds %d files, want %d", id, len(got), len(g.want))
				}
				for name, w := range g.want {
					if !bytes.Equal(got[name], w.data) {
						t.Fatalf("gen-%d/%s holds %q, want %q", id, name, trimmed(got[name]), trimmed(w.data))
					}
					fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(name)))
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode().Perm() != w.perm {
						t.Fatalf("gen-%d/%s has mode %v, want %v", id, name, fi.Mode().Perm(), w.perm)
					}
				}
			}
			checkTrusted(t, l)
		}

		steps := rapid.IntRange(2, 16).Draw(t, "steps")
		for range steps {
			// The clock unknown, as where a walk cannot read it: it then
			// knows no file's bytes by its stamp.
			l.faults = nil
			if rapid.IntRange(0, 3).Draw(t, "no clock") == 0 {
				l.faults = func(step, _ string) error {
					if step == stepClock {
						return errors.New("no clock")
					}
					return nil
				}
			}
			switch rapid.IntRange(0, 9).Draw(t, "step") {
			case 0, 1, 2, 3:
				publishGen(t)
			case 4, 5, 6:
				edit(t)
			case 7:
				prune(t)
			default:
				verify(t)
			}
			check(t)
		}
	})
}

// A write links unread only a file whose bytes the layout knew when it
// took its stamp, in a later tick of the filesystem's clock: one its own
// write wrote, or Verify read. It reads and compares first a file it
// linked (its link moved the change time), and every file found while
// the clock was unknown.
func TestLinkReadsWhatTheLayoutDoesNotKnow(t *testing.T) {
	l := genLayout(t)
	l.Link = new(testLinker)
	files := Files{"a": []byte("one"), "d/b": []byte("two"), "d/c": bytes.Repeat([]byte("3"), 3*tree.BufSize)}
	noClock := false
	var compared []string
	tick := tickClock(l.Root)
	l.faults = func(step, name string) error {
		switch {
		case step == stepClock && noClock:
			return errors.New("no clock")
		case step == stepClock:
			return tick(step, name)
		case step == stepCompare:
			compared = append(compared, name)
		}
		return nil
	}
	// write writes files as id, checks it linked every file but in a
	// first write, and returns the files it read before it linked them.
	write := func(id int64, clock, first bool) []string {
		t.Helper()
		compared, noClock = nil, !clock
		dir := l.Dir(id)
		mustWrite(t, l, id, files)
		if got := readTree(t, dir); !equalFiles(got, files) {
			t.Fatalf("gen-%d holds %q", id, got)
		}
		if n, _, _ := l.Link.(*testLinker).linked(filepath.Base(dir)); n != len(files) && !first || n != 0 && first {
			t.Fatalf("gen-%d linked %d files of %d", id, n, len(files))
		}
		var names []string
		for _, c := range compared {
			names = append(names, c[strings.Index(c, "/")+1:])
		}
		slices.Sort(names)
		return names
	}
	all := slices.Sorted(maps.Keys(files))
	for _, step := range []struct {
		id    int64
		clock bool
		want  []string
	}{
		{1, false, nil}, // written, with the clock unknown
		{2, true, all},  // linked from gen-1, unknown: read
		{3, true, all},  // linked from gen-2, which linked them: read
	} {
		if got := write(step.id, step.clock, step.id == 1); !slices.Equal(got, step.want) {
			t.Fatalf("gen-%d read %q before it linked them, want %q", step.id, got, step.want)
		}
	}
	// Verify reads gen-3: its stamps are known again.
	want, err := l.DigestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(context.Background(), 3, want, nil); err != nil {
		t.Fatal(err)
	}
	if got := write(4, true, false); len(got) != 0 {
		t.Fatalf("gen-4 read %q, linked from a directory Verify read", got)
	}
	// A write's own files, with the clock read, are known too.
	files = Files{"a": []byte("new one"), "e": []byte("new")}
	all = slices.Sorted(maps.Keys(files))
	for _, step := range []struct {
		id   int64
		want []string
	}{{5, nil}, {6, nil}, {7, all}} {
		if got := write(step.id, true, step.id == 5); !slices.Equal(got, step.want) {
			t.Fatalf("gen-%d read %q before it linked them, want %q", step.id, got, step.want)
		}
	}
}

// trimmed returns data, or its start when long.
func trimmed(data []byte) []byte {
	if len(data) > 16 {
		return append(data[:16:16], "..."...)
	}
	return data
}

// checkTrusted fails unless every file the Linker holds that a write
// would link without reading it (its bytes known, its stamp as found)
// holds the bytes and mode it says.
func checkTrusted(t *rapid.T, l Layout[int64]) {
	for d, files := range l.Link.(*testLinker).held() {
		for _, f := range files {
			p := filepath.Join(l.Root, d, filepath.FromSlash(f.Path))
			dir, err := os.Open(filepath.Dir(p))
			if err != nil {
				t.Fatal(err)
			}
			at, ok := sys.StatAt(dir, filepath.Base(p))
			dir.Close()
			if !ok || !f.known || at != f.at {
				continue // read before it is linked
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(data) != f.Sum || int64(len(data)) != f.Size || at.Perm != f.Perm {
				t.Fatalf("the layout trusts %s/%s, which holds %q, mode %v: not what it found", d, f.Path, trimmed(data), at.Perm)
			}
		}
	}
}
