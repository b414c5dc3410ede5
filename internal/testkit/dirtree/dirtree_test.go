package dirtree_test

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
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
