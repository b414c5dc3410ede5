package gentree_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"leasekit.dev/internal/testkit/gentree"
)

// trees are the shapes tested: a part directory, exact ones, sizes that
// do not divide, and empty files.
var trees = []gentree.Tree{{Files: 1, Total: 5}, {Files: 250, Total: 100_003}, {Files: 200, Total: 200 * 7}, {Files: 3, Total: 0}}

// TestFS: a Tree is a correct fs.FS holding every file it names, each of
// its size, with the bytes InMemory holds.
func TestFS(t *testing.T) {
	for _, tree := range trees {
		files := tree.InMemory()
		var names []string
		var total int64
		for i := range tree.Files {
			names = append(names, tree.Name(i))
			total += tree.Size(i)
			if int64(len(files[tree.Name(i)])) != tree.Size(i) {
				t.Fatalf("%+v: file %d holds %d bytes in memory, Size %d", tree, i, len(files[tree.Name(i)]), tree.Size(i))
			}
		}
		if total != tree.Total || len(files) != tree.Files {
			t.Fatalf("%+v: %d files of %d bytes in all", tree, len(files), total)
		}
		if err := fstest.TestFS(tree, names...); err != nil {
			t.Fatalf("%+v: %v", tree, err)
		}
		n := 0
		err := fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			data, err := fs.ReadFile(tree, p)
			if !bytes.Equal(data, files[p]) {
				t.Fatalf("%+v: %s read through the FS differs from InMemory", tree, p)
			}
			return err
		})
		if err != nil || n != tree.Files {
			t.Fatalf("%+v: walked %d files (%v)", tree, n, err)
		}
	}
}

// TestWriteTo: a tree written through a Root holds what InMemory does, and
// Measure counts it.
func TestWriteTo(t *testing.T) {
	for _, tree := range trees {
		dir := t.TempDir()
		r, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		err = tree.WriteTo(context.Background(), r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range tree.InMemory() {
			if got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%+v: %s written differs (%v)", tree, name, err)
			}
		}
		if files, size, err := gentree.Measure(dir); err != nil || files != int64(tree.Files) || size != tree.Total {
			t.Fatalf("%+v: Measure = %d files, %d bytes, %v", tree, files, size, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := trees[1].WriteTo(ctx, r); err != context.Canceled {
		t.Fatalf("WriteTo under an ended context = %v", err)
	}
}
