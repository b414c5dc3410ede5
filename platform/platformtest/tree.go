package platformtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/platformmodule"
)

// readTree returns the regular files under dir by slash-separated path. An
// entry that is neither a directory nor a regular file is an error: a
// generated module holds none.
func readTree(dir string) (platformmodule.Files, error) {
	if dir == "" {
		return nil, errors.New("the record names no directory")
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	files, err := readFS(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return files, nil
}

// readFS returns the regular files of fsys by path, refusing any other
// entry but a directory.
func readFS(fsys fs.FS) (platformmodule.Files, error) {
	files := platformmodule.Files{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file (%v)", name, d.Type())
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		files[name] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

func sameFiles(a, b platformmodule.Files) bool {
	return a != nil && b != nil && maps.EqualFunc(a, b, bytes.Equal)
}

// diff says how got differs from want, in a few words.
func diff(got, want platformmodule.Files) string {
	var missing, extra, changed []string
	for name, data := range want {
		g, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case !bytes.Equal(g, data):
			changed = append(changed, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			extra = append(extra, name)
		}
	}
	var parts []string
	add := func(what string, names []string) {
		if len(names) > 0 {
			slices.Sort(names)
			parts = append(parts, what+" "+strings.Join(names, ", "))
		}
	}
	add("missing", missing)
	add("extra", extra)
	add("different", changed)
	if len(parts) == 0 {
		return "the same files"
	}
	return strings.Join(parts, "; ")
}

// rootEntries lists the names in root, less the layout's own files. A
// missing root lists nothing.
func rootEntries(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); n != dirlife.MarkerFile && n != dirlife.LockFile {
			names = append(names, n)
		}
	}
	return names, nil
}

// entryOf returns the entry of root that holds dir, or "" when dir is not
// under root.
func entryOf(root, dir string) string {
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return first
}
