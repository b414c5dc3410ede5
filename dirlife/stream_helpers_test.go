package dirlife

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing/fstest"
)

// treeMode returns the mode f is on disk, under umask 022.
func treeMode(f File) fs.FileMode {
	if f.Mode&fs.ModeSymlink != 0 {
		return fs.ModeSymlink
	}
	return f.perm()
}

// fillTree returns a fill that makes tree in the staging directory, with
// exactly the modes WriteTree gives it (0o755 for its directories).
func fillTree(tree Tree) func(context.Context, *os.Root) error {
	return func(_ context.Context, dir *os.Root) error {
		names := make([]string, 0, len(tree))
		for name := range tree {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			f := tree[name]
			clean := path.Clean(name)
			if d := path.Dir(clean); d != "." {
				if err := dir.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			if f.Mode&fs.ModeSymlink != 0 {
				if err := dir.Symlink(string(f.Data), clean); err != nil {
					return err
				}
				continue
			}
			if err := dir.WriteFile(clean, f.Data, f.perm()); err != nil {
				return err
			}
			if err := dir.Chmod(clean, f.perm()); err != nil {
				return err
			}
		}
		return nil
	}
}

// treeFS returns tree as an fs.FS, with directories 0o755.
func treeFS(tree Tree) fstest.MapFS {
	m := fstest.MapFS{}
	for name, f := range tree {
		clean := path.Clean(name)
		mode := treeMode(f)
		m[clean] = &fstest.MapFile{Data: f.Data, Mode: mode}
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			m[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
		}
	}
	return m
}

// readEntries returns the files and links under dir as a Tree, each with
// its mode on disk, and its directories with theirs.
func readEntries(t tb, dir string) (Tree, map[string]fs.FileMode) {
	t.Helper()
	tree, dirs := Tree{}, map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs[rel] = info.Mode().Perm()
		case d.Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			tree[rel] = File{Data: []byte(target), Mode: fs.ModeSymlink}
			return err
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			tree[rel] = File{Data: data, Mode: info.Mode().Perm()}
			return err
		default:
			return fmt.Errorf("%s is irregular", p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return tree, dirs
}

// sameTree reports whether got, as read by readEntries, is want as written.
func sameTree(got, want Tree) bool {
	if len(got) != len(want) {
		return false
	}
	for name, w := range want {
		g, ok := got[path.Clean(name)]
		if !ok || string(g.Data) != string(w.Data) || g.Mode != treeMode(w) {
			return false
		}
	}
	return true
}

// streamKinds are the three ways to write a Tree: WriteTree, WriteStream
// with fillTree, CopyFS from treeFS. Each returns the digest it reports,
// or the tree's own for WriteTree.
var streamKinds = []struct {
	name  string
	write func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error)
}{
	{"tree", func(l Layout[int64], id int64, tree Tree, _ StreamOptions) (Written, error) {
		dir, err := l.WriteTree(id, tree)
		d, _ := TreeDigest(tree)
		return Written{Dir: dir, Digest: d, Published: err == nil}, err
	}},
	{"stream", func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error) {
		return l.WriteStream(context.Background(), id, fillTree(tree), opts)
	}},
	{"copy", func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error) {
		return l.CopyFS(context.Background(), id, treeFS(tree), opts)
	}},
}
