package dirtree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Walk calls f for dir itself (as ".") and every entry under it, in
// lexical order, with its slash-separated path relative to dir and its
// Lstat information; it does not follow links. It returns the first error
// of the walk or of f, and stops there.
func Walk(dir string, f func(rel string, fi fs.FileInfo) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return f(filepath.ToSlash(rel), fi)
	})
}

// Read returns the regular files under dir by slash-separated path. An
// entry that is neither a directory nor a regular file (a link, a device)
// is an error that names it.
func Read(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := Walk(dir, func(rel string, fi fs.FileInfo) error {
		switch {
		case fi.IsDir():
			return nil
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%v)", filepath.Join(dir, filepath.FromSlash(rel)), fi.Mode().Type())
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		files[rel] = data
		return err
	})
	return files, err
}

// Write writes files (slash-separated names) under dir, creating the
// directories they need, mode 0o755 and files 0o644 under the umask, and
// replacing a file already there. It returns the first error and leaves
// what it wrote until then.
func Write[D ~string | ~[]byte](dir string, files map[string]D) error {
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Names returns the names of dir's entries, sorted, as os.ReadDir lists
// them.
func Names(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// TB is what the helpers below need of a *testing.T, a *testing.B or a
// *rapid.T.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// MustWrite is [Write] in a test: it ends the test with t.Fatal at the
// first error.
func MustWrite[D ~string | ~[]byte](t TB, dir string, files map[string]D) {
	t.Helper()
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
}

// MustNames is [Names] in a test: it ends the test with t.Fatal on error.
func MustNames(t TB, dir string) []string {
	t.Helper()
	names, err := Names(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TempDir is t.TempDir for a test without one, a *rapid.T: a new
// directory under os.TempDir, removed with what it holds when the test and
// its subtests end. It ends the test with t.Fatal if it cannot make one.
func TempDir(t interface {
	TB
	Cleanup(func())
}) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dirtree-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Overwrite writes data over the start of the file at path, in place: the
// same inode, its size unchanged where data is not longer, its mode (even
// a read-only one, made writable for the write) and its modification time
// as they were: the edit no stat tells but the change time. It is how a
// test corrupts a published file behind a reader's back. It ends the test
// with t.Fatal at the first error.
func Overwrite(t TB, path string, data []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}
