package publish_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
	"pgregory.net/rapid"
)

// Publish(files) and PublishFS of the same files as an fs.FS are one
// path: driven side by side through the same random sequence, two
// Publishers report the same outcome, digest and tree for each step, and
// each recognises the other's way in as an identical re-publish.
func TestPublishFSDifferential(t *testing.T) {
	names := []string{"a", "b.txt", "sub/c", "sub/deep/d", "z"}
	rapid.Check(t, func(t *rapid.T) {
		var outA, outB publish.Outcome
		viaFiles := newPublisher(t, filepath.Join(tempDir(t), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true,
			OnPublish: func(ev publish.PublishEvent[int64]) { outA = ev.Outcome }})
		viaFS := newPublisher(t, filepath.Join(tempDir(t), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true,
			OnPublish: func(ev publish.PublishEvent[int64]) { outB = ev.Outcome }})
		ctx := context.Background()
		steps := rapid.IntRange(1, 8).Draw(t, "steps")
		for range steps {
			key := rapid.Int64Range(1, 3).Draw(t, "key")
			files := dirlife.Files{}
			for _, name := range rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 3, rapid.ID).Draw(t, "names") {
				files[name] = []byte(rapid.SampledFrom([]string{"", "x", "yy"}).Draw(t, "data"))
			}
			if files["a"] != nil && files["sub/c"] != nil && rapid.Bool().Draw(t, "bad") {
				files["bad"] = nil
			}
			a, errA := viaFiles.Publish(ctx, key, maps.Clone(files), 0)
			b, errB := viaFS.PublishFS(ctx, key, mapFS(files), 0)
			if (errA == nil) != (errB == nil) || outA != outB {
				t.Fatalf("Publish(%d, %v): %v, %v; PublishFS: %v, %v", key, slices.Sorted(maps.Keys(files)), outA, errA, outB, errB)
			}
			if errA != nil {
				continue
			}
			if a.Digest != b.Digest || a.Digest != publish.DigestFiles(files) {
				t.Fatalf("Publish digest %v, PublishFS digest %v, DigestFiles %v", a.Digest, b.Digest, publish.DigestFiles(files))
			}
			// The same names and bytes; the modes Publish writes are the
			// umask's, PublishFS's are the fs.FS's.
			checkDir(t, "Publish's directory", a.Dir, files)
			checkDir(t, "PublishFS's directory", b.Dir, files)
			// Each way in recognises the other's content as current.
			if again, err := viaFiles.PublishFS(ctx, key, mapFS(files), 1); err != nil || outA != publish.Unchanged || again.Dir != a.Dir {
				t.Fatalf("PublishFS after Publish of the same files: %v, %v in %s, want Unchanged in %s", outA, err, again.Dir, a.Dir)
			}
			if again, err := viaFS.Publish(ctx, key, maps.Clone(files), 1); err != nil || outB != publish.Unchanged || again.Dir != b.Dir {
				t.Fatalf("Publish after PublishFS of the same files: %v, %v in %s, want Unchanged in %s", outB, err, again.Dir, b.Dir)
			}
		}
	})
}

// PublishFS publishes a tree from disk as it is: directories (an empty
// one too), files with their permission bits, and links inside it. Its
// digest is that of what was written, so publishing the written
// directory again is an identical re-publish, Unchanged, in the same
// directory. Check sees the key and value, and nil files.
func TestPublishFSTree(t *testing.T) {
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "bin"), 0o755))
	must(t, os.MkdirAll(filepath.Join(src, "empty"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "conf"), []byte("x=1\n"), 0o600))
	must(t, os.Chmod(filepath.Join(src, "bin", "tool"), 0o755))
	must(t, os.Chmod(filepath.Join(src, "conf"), 0o600))
	must(t, os.Chmod(filepath.Join(src, "empty"), 0o750))
	must(t, os.Symlink("bin/tool", filepath.Join(src, "tool")))

	var checked []bool
	var outcome publish.Outcome
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{
		NoSync:    true,
		Check:     func(_ int64, files dirlife.Files, _ int) error { checked = append(checked, files == nil); return nil },
		OnPublish: func(ev publish.PublishEvent[int64]) { outcome = ev.Outcome },
	})
	ctx := context.Background()
	rec, err := p.PublishFS(ctx, 1, os.DirFS(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != publish.Published {
		t.Fatalf("outcome %v, want Published", outcome)
	}
	for name, want := range map[string]fs.FileMode{"bin/tool": 0o755, "conf": 0o600, "empty": fs.ModeDir | 0o750, "tool": fs.ModeSymlink} {
		fi, err := os.Lstat(filepath.Join(rec.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() &^ fs.ModeSymlink.Perm(); fi.Mode().Type() != want.Type() || (want.Type() != fs.ModeSymlink && got != want) {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
	}
	if target, err := os.Readlink(filepath.Join(rec.Dir, "tool")); err != nil || target != "bin/tool" {
		t.Errorf("link tool -> %q (%v), want bin/tool", target, err)
	}

	again, err := p.PublishFS(ctx, 1, os.DirFS(rec.Dir), 0)
	if err != nil || outcome != publish.Unchanged || again.Dir != rec.Dir || again.Digest != rec.Digest {
		t.Fatalf("re-publish of the written tree: %v, %v, %+v; want Unchanged in %s", outcome, err, again, rec.Dir)
	}
	if got := onDisk(t, p.Root()); !slices.Equal(got, []string{"gen-1"}) {
		t.Errorf("after an identical re-publish Root holds %v, want [gen-1]", got)
	}
	if !slices.Equal(checked, []bool{true, true}) {
		t.Errorf("Check saw nil files: %v, want [true true]", checked)
	}
}

// A tree PublishFS refuses (a link out of it, an entry it cannot read)
// leaves the current record and its directory as they were, and nothing
// else in Root once removals ran; so does a Check that refuses, before it
// reads fsys.
func TestPublishFSRefusals(t *testing.T) {
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{
		NoSync: true,
		Check: func(key int64, _ dirlife.Files, _ int) error {
			if key == 9 {
				return errBad
			}
			return nil
		},
	})
	ctx := context.Background()
	rec, err := p.PublishFS(ctx, 1, mapFS(dirlife.Files{"a": []byte("1")}), 0)
	if err != nil {
		t.Fatal(err)
	}
	hash := treeHash(t, rec.Dir)
	errRead := errors.New("read refused")
	for _, tc := range []struct {
		name string
		key  int64
		fsys fs.FS
		want func(error) bool
	}{
		{"a link out of the tree", 2, fstest.MapFS{"a": {Data: []byte("2")}, "up": {Data: []byte("../outside"), Mode: fs.ModeSymlink}},
			func(err error) bool { var ne *dirlife.NameError; return errors.As(err, &ne) }},
		{"an absolute link", 2, fstest.MapFS{"a": {Data: []byte("2")}, "abs": {Data: []byte("/etc/passwd"), Mode: fs.ModeSymlink}},
			func(err error) bool { var ne *dirlife.NameError; return errors.As(err, &ne) }},
		{"a read that fails", 2, failingFS{mapFS(dirlife.Files{"a": []byte("2"), "b": []byte("3")}), "b", errRead},
			func(err error) bool { return errors.Is(err, errRead) }},
		{"a refusing Check", 9, failingFS{mapFS(dirlife.Files{"a": []byte("2")}), ".", errRead},
			func(err error) bool { return errors.Is(err, errBad) }},
		{"a nil fs.FS", 2, nil, func(err error) bool { return err != nil }},
		{"a file at its root", 2, fstest.MapFS{".": {Data: []byte("not a tree")}},
			func(err error) bool { var ne *dirlife.NameError; return errors.As(err, &ne) }},
	} {
		_, err := p.PublishFS(ctx, tc.key, tc.fsys, 0)
		if !tc.want(err) {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if _, cur, ok := p.Slot().Get(); !ok || cur.Identity() != rec.Identity() || cur.Dir != rec.Dir {
			t.Fatalf("%s: the current record is %+v, want %+v", tc.name, cur, rec)
		}
		if got := treeHash(t, rec.Dir); got != hash {
			t.Fatalf("%s: the current directory changed", tc.name)
		}
		if got := onDisk(t, p.Root()); !slices.Equal(got, []string{"gen-1"}) {
			t.Fatalf("%s: Root holds %v, want [gen-1]", tc.name, got)
		}
	}
}

// failingFS is fsys whose Open of name fails with err.
type failingFS struct {
	fstest.MapFS
	name string
	err  error
}

func (f failingFS) Open(name string) (fs.File, error) {
	if name == f.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: f.err}
	}
	return f.MapFS.Open(name)
}

// ctx ends a PublishFS whose read of fsys blocks: here the open of a FIFO
// with no writer, which blocks until the test opens the other end, after
// PublishFS has returned. Nothing is published, and Root holds only the
// current directory.
func TestPublishFSContextEndsBlockedRead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec, err := p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	opening := make(chan struct{})
	fsys := fifoFS{MapFS: mapFS(dirlife.Files{"a": []byte("2"), "pipe": []byte("reported as a regular file")}), fifo: fifo, opening: opening}
	done := make(chan error, 1)
	go func() {
		_, err := p.PublishFS(ctx, 2, fsys, 0)
		done <- err
	}()
	<-opening
	cancel()
	err = <-done // the open of the FIFO still blocks: no writer has come
	if !errors.Is(err, context.Canceled) {
		t.Errorf("PublishFS with a blocked read, ctx canceled: %v, want context.Canceled", err)
	}
	// Let the abandoned open return, then look at Root.
	w, werr := os.OpenFile(fifo, os.O_WRONLY, 0)
	if werr != nil {
		t.Fatal(werr)
	}
	w.Close()
	if _, cur, ok := p.Slot().Get(); !ok || cur.Dir != rec.Dir {
		t.Fatalf("the current record is %+v, want %+v", cur, rec)
	}
	p.Reclaim()
	if got := onDisk(t, p.Root()); !slices.Equal(got, []string{"gen-1"}) {
		t.Errorf("Root holds %v, want [gen-1]", got)
	}
}

// fifoFS is a MapFS whose file "pipe" is read from the FIFO fifo; it
// closes opening as that open starts.
type fifoFS struct {
	fstest.MapFS
	fifo    string
	opening chan struct{}
}

func (f fifoFS) Open(name string) (fs.File, error) {
	if name != "pipe" {
		return f.MapFS.Open(name)
	}
	close(f.opening)
	return os.Open(f.fifo)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
