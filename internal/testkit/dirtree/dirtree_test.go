package dirtree_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := dirtree.Write(dir, files); err != nil {
		t.Fatal(err)
	}
}

// TestRead: Read returns every regular file that Write wrote, at any depth, with its
// bytes, and nothing for directories, empty ones included.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{"a": "1", "sub/b": "22", "sub/deep/c": "", "z": "zz"}
	write(t, dir, want)
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := dirtree.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, want, func(g []byte, w string) bool { return string(g) == w }) || len(got) != len(want) {
		t.Fatalf("Read = %q, want %q", got, want)
	}
}

// TestReadRefusesLinks: a symbolic link, even to a regular file, is an
// error naming it, not the file it points to.
func TestReadRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "1"})
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Skip(err)
	}
	if _, err := dirtree.Read(dir); err == nil || !strings.Contains(err.Error(), "link") {
		t.Fatalf("Read of a tree holding a link = %v, want an error naming it", err)
	}
}

// TestWalk: Walk visits dir as "." and every entry by slash path, in
// lexical order, and stops at f's first error, returning it.
func TestWalk(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"b/c": "x", "a": "y"})
	var seen []string
	dirs := map[string]bool{}
	if err := dirtree.Walk(dir, func(rel string, fi fs.FileInfo) error {
		seen = append(seen, rel)
		dirs[rel] = fi.IsDir()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "a", "b", "b/c"}; !slices.Equal(seen, want) || !dirs["."] || !dirs["b"] || dirs["a"] || dirs["b/c"] {
		t.Fatalf("Walk visited %v (directories %v), want %v", seen, dirs, want)
	}
	stop := errors.New("stop")
	n := 0
	err := dirtree.Walk(dir, func(string, fs.FileInfo) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("Walk after f failed = %v with %d calls, want f's error after one", err, n)
	}
	if err := dirtree.Walk(filepath.Join(dir, "missing"), func(string, fs.FileInfo) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Walk of a missing directory = %v", err)
	}
}

// fakeTB records what a helper asks of its test: Fatal ends the
// goroutine, as testing's does, and cleanups run when run is done.
type fakeTB struct {
	fatal    []any
	cleanups []func()
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Fatal(args ...any) { f.fatal = args; runtime.Goexit() }
func (f *fakeTB) Cleanup(c func())  { f.cleanups = append(f.cleanups, c) }

// run calls body with f on a goroutine of its own, as a test runs, then
// runs f's cleanups, last first, and reports whether body returned.
func (f *fakeTB) run(body func(*fakeTB)) (returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
		returned = true
	}()
	<-done
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return returned
}

// TestNames: Names lists a directory's entries, files and directories
// alike, sorted, and fails on a missing directory; MustNames returns the
// same or ends the test.
func TestNames(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"b": "", "a/x": "", "c": ""})
	want := []string{"a", "b", "c"}
	if got, err := dirtree.Names(dir); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Names = %q, %v; want %q", got, err, want)
	}
	if got := dirtree.MustNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("MustNames = %q, want %q", got, want)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := dirtree.Names(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Names of a missing directory = %v", err)
	}
	var f fakeTB
	if f.run(func(t *fakeTB) { dirtree.MustNames(t, missing) }) || len(f.fatal) == 0 {
		t.Fatalf("MustNames of a missing directory returned (Fatal %v)", f.fatal)
	}
}

// TestMustWrite: MustWrite writes what Write writes, bytes or strings,
// and ends the test where Write fails: under a regular file.
func TestMustWrite(t *testing.T) {
	dir := t.TempDir()
	dirtree.MustWrite(t, dir, map[string][]byte{"a": []byte("1"), "sub/b": []byte("2")})
	got, err := dirtree.Read(dir)
	if err != nil || len(got) != 2 || string(got["a"]) != "1" || string(got["sub/b"]) != "2" {
		t.Fatalf("after MustWrite, Read = %q, %v", got, err)
	}
	var f fakeTB
	if f.run(func(t *fakeTB) { dirtree.MustWrite(t, dir, map[string]string{"a/under-a-file": "x"}) }) || len(f.fatal) == 0 {
		t.Fatalf("MustWrite under a regular file returned (Fatal %v)", f.fatal)
	}
}

// TestTempDir: TempDir is a new empty directory, another each call, that
// the test's cleanup removes with what it holds.
func TestTempDir(t *testing.T) {
	var f fakeTB
	var dirs []string
	if !f.run(func(t *fakeTB) {
		dirs = append(dirs, dirtree.TempDir(t), dirtree.TempDir(t))
	}) {
		t.Fatalf("TempDir ended the test: %v", f.fatal)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("TempDir returned %s twice", dirs[0])
	}
	if len(f.cleanups) != 2 {
		t.Fatalf("TempDir registered %d cleanups for two directories", len(f.cleanups))
	}
	for _, dir := range dirs {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the cleanups: %v, want it removed", dir, err)
		}
	}
	var g fakeTB
	var dir string
	g.run(func(t *fakeTB) {
		dir = dirtree.TempDir(t)
		dirtree.MustWrite(t, dir, map[string]string{"sub/file": "x"})
	})
	if len(g.fatal) != 0 {
		t.Fatalf("writing into a TempDir: %v", g.fatal)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a TempDir holding files after the cleanups: %v, want it removed", err)
	}
}

// TestOverwrite: Overwrite changes a read-only file's bytes where it is:
// the same inode, mode and modification time, the new bytes read back;
// and it ends the test on a file that is not there.
func TestOverwrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("good"), 0o444); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	dirtree.Overwrite(t, p, []byte("EVIL"))
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(p); err != nil || string(got) != "EVIL" {
		t.Fatalf("after Overwrite the file holds %q (%v), want EVIL", got, err)
	}
	if !os.SameFile(before, after) || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("Overwrite changed the file's inode, mode or modification time: %v %v %v, was %v %v", os.SameFile(before, after), after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
	var f fakeTB
	if f.run(func(t *fakeTB) { dirtree.Overwrite(t, p+".missing", []byte("x")) }) || len(f.fatal) == 0 {
		t.Fatalf("Overwrite of a missing file returned (Fatal %v)", f.fatal)
	}
}
