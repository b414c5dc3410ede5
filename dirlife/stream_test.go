//go:build linux

package dirlife

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"
	"pgregory.net/rapid"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/tree"
)

func init() {
	// The digests of streamed writes take the modes on disk: the tests
	// assume the usual umask.
	syscall.Umask(0o022)
}

// artifact is a tree with what Files cannot say: an executable, a private
// file, links to a file and to a directory, and a link up and back down.
var artifact = Tree{
	"bin/tool":         {Data: []byte("#!/bin/sh\necho tool\n"), Mode: 0o755},
	"etc/secret":       {Data: []byte("s3cret"), Mode: 0o600},
	"lib/v1/libx.so":   {Data: []byte("ELF")},
	"lib/current":      {Data: []byte("v1"), Mode: fs.ModeSymlink},
	"bin/libx.so":      {Data: []byte("../lib/current/libx.so"), Mode: fs.ModeSymlink},
	"README":           {Data: []byte("read me"), Mode: 0o444},
	"share/doc/README": {Data: []byte("../../README"), Mode: fs.ModeSymlink | 0o777},
}

// TestStreamKindsWriteTheTree: WriteStream and CopyFS of one tree each
// publish it exactly (modes, links, bytes) and report one digest, the
// model's; the exec bit survives; links resolve.
func TestStreamKindsWriteTheTree(t *testing.T) {
	want, err := treeDigest(artifact)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kindsFor(artifact) {
		t.Run(k.name, func(t *testing.T) {
			l := genLayout(t)
			w, err := k.write(l, 3, artifact, StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !w.Published || w.Dir != l.Dir(3) || w.Digest != want {
				t.Fatalf("Written = %+v, want published at %s with digest %v", w, l.Dir(3), want)
			}
			got, dirs := readEntries(t, l.Dir(3))
			if !sameTree(got, artifact) {
				t.Fatalf("Dir(3) holds %v, want %v", got, artifact)
			}
			for d, mode := range dirs {
				if mode != 0o755 {
					t.Fatalf("directory %s has mode %v, want 0755", d, mode)
				}
			}
			data, err := os.ReadFile(filepath.Join(l.Dir(3), "bin/libx.so"))
			if err != nil || string(data) != "ELF" {
				t.Fatalf("reading through the links: %q, %v", data, err)
			}
			if left := leftovers(t, l.Root); len(left) != 0 {
				t.Fatalf("leftovers %v", left)
			}
		})
	}
}

// TestCopyFSModesExact: a file's mode is set whatever the umask.
func TestCopyFSModesExact(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	l := genLayout(t)
	if _, err := l.CopyFS(context.Background(), 1, treeFS(Tree{"x": {Data: []byte("x"), Mode: 0o755}, "y": {Data: []byte("y"), Mode: 0o604}}), StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := readEntries(t, l.Dir(1))
	if got["x"].Mode != 0o755 || got["y"].Mode != 0o604 {
		t.Fatalf("modes %v and %v, want 0755 and 0604", got["x"].Mode, got["y"].Mode)
	}
}

// TestDigestDifferential draws trees (files with modes, links between
// them, or plain Files) and holds the writers, the model's digest and
// DigestFiles equal: each writer publishes the tree exactly and reports
// the model's digest (Write, for a plain tree, publishes what CopyFS
// does, and DigestFiles gives that digest); a changed byte, mode or target
// changes it.
func TestDigestDifferential(t *testing.T) {
	tmp := t.TempDir()
	paths := []string{"a", "b", "a.txt", "d/x", "d/y", "d/e/z", "dd/x", "E", "d.x/q"}
	rapid.Check(t, func(t *rapid.T) {
		tree := Tree{}
		for _, p := range rapid.SliceOfNDistinct(rapid.SampledFrom(paths), 1, 5, rapid.ID).Draw(t, "paths") {
			tree[p] = Entry{
				Data: []byte(rapid.StringN(0, 8, -1).Draw(t, "data")),
				Mode: rapid.SampledFrom([]fs.FileMode{0, 0o644, 0o755, 0o600, 0o400}).Draw(t, "mode"),
			}
		}
		var list []string
		for name := range tree {
			list = append(list, name)
		}
		slices.Sort(list)
		if _, err := names.PlanNames(slices.Clone(list)); err != nil {
			t.Skip("conflicting paths")
		}
		// Some files become links to others, unless the tree is kept
		// plain, as Files.
		plain := rapid.Bool().Draw(t, "plain")
		for _, name := range list {
			if plain {
				tree[name] = Entry{Data: tree[name].Data}
				continue
			}
			if len(list) > 1 && rapid.Bool().Draw(t, "link "+name) {
				to := rapid.SampledFrom(list).Draw(t, "to")
				if to == name || tree[to].Mode&fs.ModeSymlink != 0 {
					continue
				}
				rel, _ := filepath.Rel(filepath.Dir(name), to)
				tree[name] = Entry{Data: []byte(rel), Mode: fs.ModeSymlink}
			}
		}
		want, err := treeDigest(tree)
		if err != nil {
			t.Fatalf("TreeDigest: %v", err)
		}
		base, err := os.MkdirTemp(tmp, "case")
		if err != nil {
			t.Fatal(err)
		}
		l := Layout[int64]{Root: base + "/root", Codec: IntCodec[int64]{}, NoSync: true}
		if files, ok := filesOf(tree); ok {
			if d, err := digestFiles(files); err != nil || d != want {
				t.Fatalf("DigestFiles = %v, %v; the model's digest %v", d, err, want)
			}
		}
		for i, k := range kindsFor(tree) {
			w, err := k.write(l, int64(i), tree, StreamOptions{})
			if err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			if w.Digest != want {
				t.Fatalf("%s reported digest %v, TreeDigest %v", k.name, w.Digest, want)
			}
			if got, _ := readEntries(t, l.Dir(int64(i))); !sameTree(got, tree) {
				t.Fatalf("%s wrote %v, want %v", k.name, got, tree)
			}
		}
		// A copy of what was written has the digest too.
		w, err := l.CopyFS(context.Background(), 9, os.DirFS(l.Dir(1)), StreamOptions{})
		if err != nil || w.Digest != want {
			t.Fatalf("CopyFS of the written tree: %v, %v; want digest %v", w.Digest, err, want)
		}
		// Every change shows.
		name := rapid.SampledFrom(list).Draw(t, "change")
		changed := Tree{}
		for n, f := range tree {
			changed[n] = f
		}
		f := changed[name]
		switch {
		case f.Mode&fs.ModeSymlink != 0:
			f.Data = append([]byte("./"), f.Data...)
		case rapid.Bool().Draw(t, "change mode"):
			f.Mode = treeMode(f) ^ 0o100
		default:
			f.Data = append(slices.Clone(f.Data), 'x')
		}
		changed[name] = f
		if d, err := treeDigest(changed); err != nil || d == want {
			t.Fatalf("changing %s left the digest %v (%v)", name, d, err)
		}
	})
	files := Files{"a": []byte("x"), "d/b": nil}
	d1, _ := digestFiles(files)
	d2, _ := digestFiles(Files{"a": []byte("x"), "./d//b": nil})
	d3, _ := treeDigest(Tree{"a": {Data: []byte("x"), Mode: 0o644}, "./d//b": {}})
	if d1 != d2 || d1 != d3 || d1.IsZero() {
		t.Fatalf("DigestFiles %v and %v of one content, the model's %v", d1, d2, d3)
	}
	if _, err := digestFiles(Files{"../out": nil}); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("DigestFiles of an escaping name = %v, want a NameError", err)
	}
	if _, err := digestFiles(nil); !errors.Is(err, ErrNoFiles) {
		t.Fatalf("DigestFiles(nil) = %v, want ErrNoFiles", err)
	}
}

// writeArtifact writes artifact as ID 5 with k on a new Layout, for a
// test that then writes that content again: it returns the Layout, what
// the write reported, and the directory's FileInfo, to tell whether a
// later write replaced it.
func writeArtifact(t *testing.T, k streamKind) (Layout[int64], Written, fs.FileInfo) {
	t.Helper()
	l := genLayout(t)
	first, err := k.write(l, 5, artifact, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(l.Dir(5))
	if err != nil {
		t.Fatal(err)
	}
	return l, first, before
}

// TestStreamUnchangedDiscards: a streamed write whose content has the
// digest given as Current publishes nothing, and leaves the directory
// (the same inode) and Root as they were, syncing and renaming nothing;
// a changed content publishes.
func TestStreamUnchangedDiscards(t *testing.T) {
	for _, k := range streamKinds[1:] {
		t.Run(k.name, func(t *testing.T) {
			l, first, before := writeArtifact(t, k)
			rec := newRecorder()
			l.faults = rec.hook
			again, err := k.write(l, 5, artifact, StreamOptions{Current: first.Digest})
			l.faults = nil
			if err != nil || again.Published || again.Digest != first.Digest {
				t.Fatalf("identical re-publish = %+v, %v; want unpublished, digest %v", again, err, first.Digest)
			}
			if e, ok := rec.took("sync", stepRename, stepExchange); ok {
				t.Fatalf("an identical re-publish took step %q: %v", e, rec.events)
			}
			after, err := os.Stat(l.Dir(5))
			if err != nil || !os.SameFile(before, after) {
				t.Fatal("the directory was replaced by an identical re-publish")
			}
			if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5"}) {
				t.Fatalf("root = %v", got)
			}
			changed := Tree{"only": {Data: []byte("new")}}
			w, err := k.write(l, 5, changed, StreamOptions{Current: first.Digest})
			if err != nil || !w.Published {
				t.Fatalf("changed re-publish = %+v, %v", w, err)
			}
			if got, _ := readEntries(t, l.Dir(5)); !sameTree(got, changed) {
				t.Fatalf("Dir(5) = %v", got)
			}
		})
	}
}

// checkUntouched checks that ID 7 holds oldFiles, nothing else is in Root
// once removals settle, and the precious file outside is as it was.
func checkUntouched(t *testing.T, l Layout[int64], outside string) {
	t.Helper()
	checkIDs(t, l, 7)
	if got := readTree(t, l.Dir(7)); !sameFiles(got, oldFiles) {
		t.Fatalf("Dir(7) = %v, want the old files", keys(got))
	}
	if left := leftovers(t, l.Root); len(left) != 0 {
		t.Fatalf("leftovers %v", left)
	}
	if outside != "" {
		if got := readTree(t, outside); !sameFiles(got, Files{"precious": []byte("keep me")}) {
			t.Fatalf("outside Root changed: %v", keys(got))
		}
	}
}

// hostileFills are fills that leave something the layout refuses, each
// with the name its NameError must carry.
var hostileFills = []struct {
	name, bad string
	fill      func(dir *os.Root) error
}{
	{"absolute link", "x", func(d *os.Root) error { return d.Symlink("/etc/passwd", "x") }},
	{"link up and out", "x", func(d *os.Root) error { return d.Symlink("../outside", "x") }},
	{"link to a sibling ID", "sub/x", func(d *os.Root) error {
		return errors.Join(d.Mkdir("sub", 0o755), d.Symlink("../../gen-8/f", "sub/x"))
	}},
	{"link out through a link", "t", func(d *os.Root) error {
		return errors.Join(d.Symlink(".", "s"), d.Symlink("s/..", "t"))
	}},
	{"link out through a deeper link", "x", func(d *os.Root) error {
		return errors.Join(d.Mkdir("deep", 0o755), d.Symlink("..", "deep/s"), d.Symlink("deep/s/..", "x"))
	}},
	{"dangling link", "x", func(d *os.Root) error { return d.Symlink("nothing", "x") }},
	{"link loop", "a", func(d *os.Root) error { return errors.Join(d.Symlink("b", "a"), d.Symlink("a", "b")) }},
	{"backslash target", "x", func(d *os.Root) error {
		return errors.Join(d.WriteFile(`f`, nil, 0o644), d.Symlink(`.\f`, "x"))
	}},
	{"setuid file", "f", func(d *os.Root) error {
		return errors.Join(d.WriteFile("f", nil, 0o755), d.Chmod("f", 0o755|fs.ModeSetuid))
	}},
	{"setgid directory", "d", func(d *os.Root) error {
		return errors.Join(d.Mkdir("d", 0o755), d.Chmod("d", 0o755|fs.ModeSetgid), d.WriteFile("d/f", nil, 0o644))
	}},
	{"sticky directory", "d", func(d *os.Root) error {
		return errors.Join(d.Mkdir("d", 0o777), d.Chmod("d", 0o777|fs.ModeSticky), d.WriteFile("d/f", nil, 0o644))
	}},
	{"unwritable directory", "d", func(d *os.Root) error {
		return errors.Join(d.Mkdir("d", 0o755), d.WriteFile("d/f", nil, 0o644), d.Chmod("d", 0o555))
	}},
	{"unwritable staging directory", ".", func(d *os.Root) error {
		return errors.Join(d.WriteFile("f", nil, 0o644), d.Chmod(".", 0o500))
	}},
	{"named pipe", "p", func(d *os.Root) error { return unix.Mkfifo(filepath.Join(d.Name(), "p"), 0o644) }},
	{"hard link", "a", func(d *os.Root) error { return errors.Join(d.WriteFile("a", nil, 0o644), d.Link("a", "b")) }},
	{"case collision", "dir/readme", func(d *os.Root) error {
		return errors.Join(d.Mkdir("dir", 0o755), d.WriteFile("dir/README", nil, 0o644), d.WriteFile("dir/readme", nil, 0o644))
	}},
	{"device name", "x/nul.txt", func(d *os.Root) error {
		return errors.Join(d.Mkdir("x", 0o755), d.WriteFile("x/nul.txt", nil, 0o644))
	}},
	{"trailing dot", "a.", func(d *os.Root) error { return d.WriteFile("a.", nil, 0o644) }},
	{"control character", "a\tb", func(d *os.Root) error { return d.WriteFile("a\tb", nil, 0o644) }},
}

// TestStreamRefusesHostileTrees: a fill that leaves a link leading out
// (directly, through other links, absolute, dangling, looping), a special
// mode, a pipe, a hard link or an unportable name gets a NameError naming
// the entry; nothing is published, the old directory is intact, nothing
// is left in Root and nothing outside it changed.
func TestStreamRefusesHostileTrees(t *testing.T) {
	for _, c := range hostileFills {
		t.Run(c.name, func(t *testing.T) {
			l, outside := outsideLayout(t)
			var ne *NameError
			_, err := l.WriteStream(context.Background(), 7, func(_ context.Context, d *os.Root) error { return c.fill(d) }, StreamOptions{})
			if !errors.As(err, &ne) || ne.Name != c.bad {
				t.Fatalf("WriteStream = %v, want a NameError for %q", err, c.bad)
			}
			t.Log(err)
			checkUntouched(t, l, outside)
		})
	}
}

// outsideLayout returns a layout whose ID 7 holds oldFiles, and a
// directory beside Root holding a precious file.
func outsideLayout(t *testing.T) (Layout[int64], string) {
	t.Helper()
	l := genLayout(t)
	outside := filepath.Join(filepath.Dir(l.Root), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, l, 7, oldFiles)
	return l, outside
}

// TestStreamConfined: what a fill does through its Root stays in the
// staging directory: creating above it, or through a link it planted to
// outside, fails, and the layout's own steps after the fill follow no
// such link.
func TestStreamConfined(t *testing.T) {
	l, outside := outsideLayout(t)
	var tried []error
	_, err := l.WriteStream(context.Background(), 7, func(_ context.Context, d *os.Root) error {
		tried = append(tried,
			d.WriteFile("../escaped", nil, 0o644),
			d.Symlink(outside, "out"),
			d.WriteFile("out/escaped", nil, 0o644),
			d.Symlink("../../outside", "rel"),
			d.WriteFile("rel/escaped", nil, 0o644),
			d.Chmod("rel/precious", 0o777),
		)
		return nil
	}, StreamOptions{})
	if !errors.Is(err, ErrInvalidName) {
		t.Fatalf("WriteStream = %v, want a refused link", err)
	}
	if tried[0] == nil || tried[2] == nil || tried[4] == nil || tried[5] == nil {
		t.Fatalf("the fill escaped its Root: %v", tried)
	}
	if fi, err := os.Stat(filepath.Join(outside, "precious")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("outside changed: %v, %v", fi, err)
	}
	checkUntouched(t, l, outside)
}

// TestCopyFSRefusals: the modes and link targets of an fs.FS's entries
// are checked before they are copied, links that lead out through other
// links once staged; each refusal list the entry, and leaves the old
// directory intact.
func TestCopyFSRefusals(t *testing.T) {
	for _, c := range []struct {
		name, bad string
		tree      Tree
	}{
		{"setuid", "f", Tree{"f": {Mode: 0o755 | fs.ModeSetuid}}},
		{"setgid", "f", Tree{"f": {Mode: 0o755 | fs.ModeSetgid}}},
		{"sticky", "f", Tree{"f": {Mode: fs.ModeSticky}}},
		{"a device", "dev", Tree{"dev": {Mode: fs.ModeDevice}}},
		{"empty target", "l", Tree{"l": {Mode: fs.ModeSymlink}}},
		{"absolute target", "l", Tree{"l": {Data: []byte("/etc"), Mode: fs.ModeSymlink}}},
		{"escaping target", "a/l", Tree{"a/l": {Data: []byte("../../x"), Mode: fs.ModeSymlink}}},
		{"NUL in target", "l", Tree{"l": {Data: []byte("a\x00"), Mode: fs.ModeSymlink}}},
		{"a link's path through a link", "l", Tree{"l": {Data: []byte("d"), Mode: fs.ModeSymlink}, "l/x": {}}},
		{"out through a link", "t", Tree{"s": {Data: []byte("."), Mode: fs.ModeSymlink}, "./t": {Data: []byte("s/.."), Mode: fs.ModeSymlink}}},
		{"dangling", "l", Tree{"l": {Data: []byte("nothing"), Mode: fs.ModeSymlink}}},
		{"loop", "a", Tree{"a": {Data: []byte("b"), Mode: fs.ModeSymlink}, "b": {Data: []byte("a"), Mode: fs.ModeSymlink}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, outside := outsideLayout(t)
			_, err := l.CopyFS(context.Background(), 7, treeFS(c.tree), StreamOptions{})
			var ne *NameError
			if !errors.As(err, &ne) || ne.Name != c.bad {
				t.Fatalf("CopyFS = %v, want a NameError for %q", err, c.bad)
			}
			t.Log(err)
			checkUntouched(t, l, outside)
		})
	}
	if _, err := genLayout(t).CopyFS(context.Background(), 1, fstest.MapFS{}, StreamOptions{}); !errors.Is(err, ErrNoFiles) {
		t.Fatalf("CopyFS of an empty fs.FS = %v, want ErrNoFiles", err)
	}
}

// TestStreamEmptyRefused: a fill that makes nothing is refused with
// ErrNoFiles, as an empty Files is.
func TestStreamEmptyRefused(t *testing.T) {
	l, outside := outsideLayout(t)
	_, err := l.WriteStream(context.Background(), 7, func(context.Context, *os.Root) error { return nil }, StreamOptions{})
	if !errors.Is(err, ErrNoFiles) {
		t.Fatalf("WriteStream = %v, want ErrNoFiles", err)
	}
	checkUntouched(t, l, outside)
}

// TestStreamFailingFill: a fill's error, panic or runtime.Goexit leaves
// nothing behind and the previous directory exactly as it was, and frees
// the root's lock (a Prune then runs).
func TestStreamFailingFill(t *testing.T) {
	boom := errors.New("boom")
	half := func(d *os.Root) {
		d.MkdirAll("m/n", 0o755)
		d.WriteFile("m/n/half", []byte("half"), 0o644)
	}
	t.Run("error", func(t *testing.T) {
		l, outside := outsideLayout(t)
		_, err := l.WriteStream(context.Background(), 7, func(_ context.Context, d *os.Root) error { half(d); return boom }, StreamOptions{})
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), l.Dir(7)) {
			t.Fatalf("WriteStream = %v, want boom naming the directory", err)
		}
		checkUntouched(t, l, outside)
		mustPrune(t, l, 7)
	})
	t.Run("panic", func(t *testing.T) {
		l, outside := outsideLayout(t)
		func() {
			defer func() {
				if v := recover(); v != boom {
					t.Fatalf("recovered %v, want the fill's panic value", v)
				}
			}()
			l.WriteStream(context.Background(), 7, func(_ context.Context, d *os.Root) error { half(d); panic(boom) }, StreamOptions{})
		}()
		checkUntouched(t, l, outside)
		mustPrune(t, l, 7)
	})
	t.Run("goexit", func(t *testing.T) {
		l, outside := outsideLayout(t)
		var wg sync.WaitGroup
		wg.Go(func() {
			l.WriteStream(context.Background(), 7, func(_ context.Context, d *os.Root) error { half(d); runtime.Goexit(); return nil }, StreamOptions{})
			t.Error("WriteStream returned after a Goexit")
		})
		wg.Wait()
		checkUntouched(t, l, outside)
		mustPrune(t, l, 7)
	})
	t.Run("panicking fs", func(t *testing.T) {
		l, outside := outsideLayout(t)
		func() {
			defer func() {
				if v := recover(); v != boom {
					t.Fatalf("recovered %v, want the fs's panic value", v)
				}
			}()
			l.CopyFS(context.Background(), 7, panicFS{boom}, StreamOptions{})
		}()
		checkUntouched(t, l, outside)
	})
	t.Run("ctx done during fill", func(t *testing.T) {
		l, outside := outsideLayout(t)
		ctx, cancel := context.WithCancel(context.Background())
		_, err := l.WriteStream(ctx, 7, func(_ context.Context, d *os.Root) error { half(d); cancel(); return nil }, StreamOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WriteStream = %v, want context.Canceled", err)
		}
		checkUntouched(t, l, outside)
	})
}

type panicFS struct{ v any }

func (p panicFS) Open(name string) (fs.File, error) {
	if name == "." {
		return fstest.MapFS{"f": {}}.Open(".")
	}
	panic(p.v)
}

// blockingFS serves one file whose first read blocks until release is
// closed, and reports on started when it blocks.
type blockingFS struct {
	started chan struct{}
	release chan struct{}
	done    chan struct{} // closed when the blocked read returns
}

func (b blockingFS) Open(name string) (fs.File, error) {
	if name != "slow" {
		return fstest.MapFS{"fast": {Data: []byte("fast")}, "slow": {}}.Open(name)
	}
	return blockingFile{b}, nil
}

type blockingFile struct{ b blockingFS }

func (f blockingFile) Stat() (fs.FileInfo, error) {
	return fstest.MapFS{"slow": {}}.Stat("slow")
}
func (f blockingFile) Read([]byte) (int, error) {
	close(f.b.started)
	<-f.b.release
	close(f.b.done)
	return 0, io.EOF
}
func (f blockingFile) Close() error { return nil }

// TestCopyFSCancelBlockedRead: a ctx cancelled while a read from fsys
// blocks ends CopyFS at once with ctx's error, nothing published and the
// old directory intact; the abandoned read's goroutine ends when the read
// returns.
func TestCopyFSCancelBlockedRead(t *testing.T) {
	l, outside := outsideLayout(t)
	b := blockingFS{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-b.started; cancel() }()
	_, err := l.CopyFS(ctx, 7, b, StreamOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CopyFS = %v, want context.Canceled", err)
	}
	checkUntouched(t, l, outside)
	close(b.release)
	<-b.done
}

// TestCopyFSModes: CopyFS keeps a file's permission bits exactly and
// gives directories the owner's rwx; an embed.FS-like read-only tree
// becomes writable directories and read-only files; fsys's setuid bit is
// refused.
func TestCopyFSModes(t *testing.T) {
	l := genLayout(t)
	fsys := fstest.MapFS{
		"ro":      {Mode: fs.ModeDir | 0o555},
		"ro/f":    {Data: []byte("f"), Mode: 0o444},
		"ro/x":    {Data: []byte("x"), Mode: 0o555},
		"private": {Mode: fs.ModeDir | 0o700},
		"empty":   {Mode: fs.ModeDir | 0o750},
	}
	if _, err := l.CopyFS(context.Background(), 1, fsys, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	tree, dirs := readEntries(t, l.Dir(1))
	if tree["ro/f"].Mode != 0o444 || tree["ro/x"].Mode != 0o555 {
		t.Fatalf("file modes %v", tree)
	}
	if dirs["ro"] != 0o755 || dirs["private"] != 0o700 || dirs["empty"] != 0o750 {
		t.Fatalf("directory modes %v", dirs)
	}
	mustPrune(t, l)
	settle(t, l)
	fsys["ro/x"].Mode |= fs.ModeSetuid
	var ne *NameError
	if _, err := l.CopyFS(context.Background(), 1, fsys, StreamOptions{}); !errors.As(err, &ne) || ne.Name != "ro/x" {
		t.Fatalf("CopyFS of a setuid file = %v, want a NameError for ro/x", err)
	}
	if _, err := l.CopyFS(context.Background(), 1, fstest.MapFS{"l": {Data: []byte("../x"), Mode: fs.ModeSymlink}}, StreamOptions{}); !errors.As(err, &ne) || ne.Name != "l" {
		t.Fatalf("CopyFS of an escaping link = %v, want a NameError for l", err)
	}
}

// TestStreamBoundsDescriptors: a streamed write (syncing the filesystem)
// and a copy (syncing file by file) of the 1,000-directory tree hold no
// more descriptors than a Write, beyond the fill's own.
func TestStreamBoundsDescriptors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	tree := treeOf(bigTree())
	for i, k := range streamKinds[1:] {
		perFile := i == 1 // a stream under syncfs, a copy file by file
		t.Run(k.name, func(t *testing.T) {
			l := genLayout(t)
			l.PerFileSync = perFile
			before := openFDs(t)
			var mu sync.Mutex
			peak := 0
			l.faults = func(step, name string) error {
				mu.Lock()
				defer mu.Unlock()
				if n := openFDs(t) - before; n > peak {
					peak = n
				}
				return nil
			}
			if _, err := k.write(l, 1, tree, StreamOptions{}); err != nil {
				t.Fatal(err)
			}
			if peak > maxWriteFDs {
				t.Fatalf("peak %d descriptors, over the bound of %d", peak, maxWriteFDs)
			}
			t.Logf("peak: %d descriptors (bound %d)", peak, maxWriteFDs)
			if after := openFDs(t); after > before {
				t.Fatalf("%d descriptors open after, %d before", after, before)
			}
		})
	}
}

// TestMakeRemovable: the directories of a failed or refused fill get the
// owner's rwx back before the staging directory is removed, so that a
// process without privileges can remove it.
func TestMakeRemovable(t *testing.T) {
	dir := t.TempDir()
	sr, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if err := errors.Join(sr.MkdirAll("a/b/c", 0o755), sr.WriteFile("a/b/f", nil, 0o400), sr.Symlink("a", "l"),
		sr.Chmod("a/b/c", 0o500), sr.Chmod("a/b", 0o555), sr.Chmod("a", 0o100)); err != nil {
		t.Fatal(err)
	}
	tree.MakeRemovable(sr, ".")
	for d, want := range map[string]fs.FileMode{"a": 0o700, "a/b": 0o755, "a/b/c": 0o700} {
		if fi, err := os.Lstat(filepath.Join(dir, d)); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v, %v; want mode %v", d, fi.Mode(), err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "a/b/f")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Fatalf("a file's mode changed: %v, %v", fi.Mode(), err)
	}
}

// TestStreamExisting: a streamed write whose StreamOptions.Existing finds
// the staged content in another ID's directory (verify reads it and it
// matches) publishes nothing, syncing and renaming nothing and leaving no
// staging directory, and that directory is untouched; one whose offered
// directory was edited (verify reports the mismatch) publishes as usual;
// an error of Existing fails the write, publishing nothing; verify
// refuses a name that is no ID's directory; and ctx's end during verify
// fails the write with ctx's error.
func TestStreamExisting(t *testing.T) {
	for _, k := range streamKinds[1:] {
		t.Run(k.name, func(t *testing.T) {
			l, first, before := writeArtifact(t, k)
			var offered Digest
			var verified []error
			existing := func(names ...string) func(Digest, func(string) error) (bool, error) {
				return func(d Digest, verify func(string) error) (bool, error) {
					offered, verified = d, nil
					for _, n := range names {
						err := verify(n)
						verified = append(verified, err)
						if err == nil {
							return true, nil
						}
					}
					return false, nil
				}
			}

			rec := newRecorder()
			l.faults = rec.hook
			w, err := k.write(l, 9, artifact, StreamOptions{Existing: existing("gen-5")})
			l.faults = nil
			if err != nil || w.Published || w.Digest != first.Digest || offered != first.Digest || len(verified) != 1 || verified[0] != nil {
				t.Fatalf("a write of gen-5's content as 9 = %+v, %v (offered %v, verified %v); want it unpublished", w, err, offered, verified)
			}
			if e, ok := rec.took("sync", stepRename, stepExchange, stepDigestAttr); ok {
				t.Fatalf("a write found existing took step %q: %v", e, rec.events)
			}
			settle(t, l)
			if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5"}) {
				t.Fatalf("root = %v, want gen-5 alone", got)
			}
			if after, err := os.Stat(l.Dir(5)); err != nil || !os.SameFile(before, after) {
				t.Fatalf("gen-5 was replaced: %v", err)
			}

			// An edit, size and all, that verify reads.
			f := filepath.Join(l.Dir(5), "lib", "v1", "libx.so")
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 1
			if err := os.WriteFile(f, data, 0); err != nil {
				t.Fatal(err)
			}
			w, err = k.write(l, 9, artifact, StreamOptions{Existing: existing("gen-5")})
			if err != nil || !w.Published || len(verified) != 1 || !errors.Is(verified[0], ErrDigestMismatch) {
				t.Fatalf("beside an edited gen-5: %+v, %v, verified %v; want published and a mismatch", w, err, verified)
			}
			if got, _ := readEntries(t, l.Dir(9)); !sameTree(got, artifact) {
				t.Fatalf("Dir(9) = %v", got)
			}

			boom := errors.New("boom")
			if _, err := k.write(l, 10, artifact, StreamOptions{Existing: func(Digest, func(string) error) (bool, error) { return false, boom }}); !errors.Is(err, boom) {
				t.Fatalf("a write whose Existing failed = %v, want boom", err)
			}
			w, err = k.write(l, 10, artifact, StreamOptions{Existing: existing("stray", "gen-404", "gen-9")})
			if err != nil || w.Published || len(verified) != 3 || verified[2] != nil {
				t.Fatalf("verify of stray, gen-404, gen-9 = %+v, %v, %v", w, err, verified)
			}
			if ne, ok := errors.AsType[*NameError](verified[0]); !ok || ne.Name != "stray" {
				t.Fatalf("verify(stray) = %v, want a NameError", verified[0])
			}
			if !errors.Is(verified[1], fs.ErrNotExist) {
				t.Fatalf("verify(gen-404) = %v, want it missing", verified[1])
			}

			ctx, cancel := context.WithCancel(context.Background())
			_, err = l.CopyFS(ctx, 10, treeFS(artifact), StreamOptions{Existing: func(_ Digest, verify func(string) error) (bool, error) {
				cancel()
				err := verify("gen-9")
				return err == nil, err
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a write whose ctx ended during verify = %v, want context.Canceled", err)
			}
			settle(t, l)
			if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5", "gen-9"}) {
				t.Fatalf("root = %v, want gen-5 and gen-9", got)
			}
		})
	}
}
