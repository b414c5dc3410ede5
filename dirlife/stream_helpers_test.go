package dirlife

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing/fstest"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/tree"
)

// An Entry is one entry of a test's Tree: a regular file with its content
// and permission bits, or a symbolic link whose target is Data. Mode zero
// means 0o644.
type Entry struct {
	Data []byte
	Mode fs.FileMode
}

// perm returns the permission bits f is written with.
func (f Entry) perm() fs.FileMode {
	if f.Mode.Perm() == 0 {
		return defaultFilePerm
	}
	return f.Mode.Perm()
}

// A Tree describes what a test writes with [Layout.WriteStream] (through
// fillTree), [Layout.CopyFS] (through treeFS) or, when it is plain,
// [Layout.Write]: slash-separated paths to files and links, directories
// implied, each 0o755.
type Tree map[string]Entry

// treeOf returns files as a Tree, each file 0o644.
func treeOf(files Files) Tree {
	t := make(Tree, len(files))
	for name, data := range files {
		t[name] = Entry{Data: data}
	}
	return t
}

// filesOf returns tree as Files, and whether it is plain: only files, each
// 0o644, as Write writes them.
func filesOf(tree Tree) (Files, bool) {
	files := make(Files, len(tree))
	plain := true
	for name, f := range tree {
		files[name] = f.Data
		plain = plain && f.Mode&fs.ModeSymlink == 0 && f.perm() == defaultFilePerm
	}
	return files, plain
}

// treeDigest is the Digest of t as the tests expect it, computed from
// the description alone (each entry's kind, mode and bytes, entered in
// the order DigestFiles enters its plan, which the streamed writers'
// walk does not share): the model the writers' digests are held to. It
// refuses the names Write refuses.
func treeDigest(t Tree) (Digest, error) {
	given := make([]string, 0, len(t))
	for name := range t {
		given = append(given, name)
	}
	p, err := names.PlanNames(given)
	if err != nil {
		return Digest{}, err
	}
	return digestPlanned(p, func(dg *tree.Digester, name string, i int) {
		f := t[p.From[i]]
		if f.Mode&fs.ModeSymlink != 0 {
			dg.Link(name, string(f.Data))
			return
		}
		dg.File(name, f.perm(), int64(len(f.Data)), sha256.Sum256(f.Data))
	}), nil
}

// treeMode returns the mode f is on disk, under umask 022.
func treeMode(f Entry) fs.FileMode {
	if f.Mode&fs.ModeSymlink != 0 {
		return fs.ModeSymlink
	}
	return f.perm()
}

// fillTree returns a fill that makes tree in the staging directory, with
// exactly its modes (0o755 for its directories).
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
		mode := treeMode(f)
		if mode&fs.ModeSymlink == 0 {
			mode |= f.Mode &^ fs.ModePerm // the bits a copy refuses, too
		}
		m[path.Clean(name)] = &fstest.MapFile{Data: f.Data, Mode: mode}
	}
	for name := range tree {
		for d := path.Dir(path.Clean(name)); d != "."; d = path.Dir(d) {
			if m[d] == nil { // an entry of the tree keeps its own
				m[d] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
			}
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
			tree[rel] = Entry{Data: []byte(target), Mode: fs.ModeSymlink}
			return err
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			tree[rel] = Entry{Data: data, Mode: info.Mode().Perm()}
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

// A streamKind is a way to write a Tree.
type streamKind struct {
	name  string
	plain bool // it writes only plain trees (see filesOf)
	write func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error)
}

// streamKinds are the three ways to write a Tree: Write of its Files
// (plain trees only), WriteStream with fillTree, CopyFS from treeFS. Each
// returns the digest it reports, or DigestFiles's for Write, which
// ignores opts.
var streamKinds = []streamKind{
	{"write", true, func(l Layout[int64], id int64, tree Tree, _ StreamOptions) (Written, error) {
		files, _ := filesOf(tree)
		dir, err := l.Write(id, files)
		d, _ := digestFiles(files)
		return Written{Dir: dir, Digest: d, Published: dir != ""}, err
	}},
	{"stream", false, func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error) {
		return l.WriteStream(context.Background(), id, fillTree(tree), opts)
	}},
	{"copy", false, func(l Layout[int64], id int64, tree Tree, opts StreamOptions) (Written, error) {
		return l.CopyFS(context.Background(), id, treeFS(tree), opts)
	}},
}

// kindsFor returns the streamKinds that can write tree.
func kindsFor(tree Tree) []streamKind {
	if _, plain := filesOf(tree); plain {
		return streamKinds
	}
	return streamKinds[1:]
}
