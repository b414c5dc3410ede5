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
