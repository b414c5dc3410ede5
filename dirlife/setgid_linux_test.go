package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"testing/fstest"

	"leasekit.dev/internal/testkit/dirtree"
)

// setgidLayout returns a layout whose Root has the setgid bit, as a shared
// group directory or a volume mounted with an fsGroup has it: every
// directory made in it gets the bit from it.
func setgidLayout(t *testing.T) Layout[int64] {
	t.Helper()
	l := genLayout(t)
	if err := os.Mkdir(l.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(l.Root, 0o755|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(l.Root)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSetgid == 0 {
		t.Skip("the filesystem of the test's temporary directory keeps no setgid bit")
	}
	return l
}

// modesUnder returns the mode of every entry under dir, by slash path.
func modesUnder(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	modes := map[string]fs.FileMode{}
	err := dirtree.Walk(dir, func(rel string, fi fs.FileInfo) error {
		modes[rel] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return modes
}

// TestSetgidRoot: on a Root with the setgid bit, the bit the system passes
// on to the directories made in it is not an entry the caller made. Every
// write verb publishes the same content there, with one digest, and the
// same modes, each directory carrying the bit passed on; a rewrite of each
// succeeds too.
func TestSetgidRoot(t *testing.T) {
	l := setgidLayout(t)
	tree := Tree{
		"top.txt":       {Data: []byte("top"), Mode: 0o600},
		"a/b/deep.txt":  {Data: []byte("deep")},
		"a/mid.txt":     {Data: []byte("mid"), Mode: 0o640},
		"a/b/c/end.txt": {Data: []byte("end")},
	}
	files := Files{}
	for name, f := range tree {
		files[name] = f.Data
	}
	plain := treeOf(files) // the same names and bytes, each 0o644
	want, err := treeDigest(tree)
	if err != nil {
		t.Fatal(err)
	}
	wantPlain, err := treeDigest(plain)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	verbs := []struct {
		name   string
		digest Digest // of what the verb publishes
		write  func(id int64) (Digest, error)
	}{
		{"Write", wantPlain, func(id int64) (Digest, error) { _, err := l.Write(id, files); return wantPlain, err }},
		{"CopyFS of Files", wantPlain, func(id int64) (Digest, error) {
			w, err := l.CopyFS(ctx, id, treeFS(plain), StreamOptions{})
			return w.Digest, err
		}},
		{"WriteStream", want, func(id int64) (Digest, error) {
			w, err := l.WriteStream(ctx, id, fillTree(tree), StreamOptions{})
			return w.Digest, err
		}},
		{"CopyFS", want, func(id int64) (Digest, error) {
			w, err := l.CopyFS(ctx, id, treeFS(tree), StreamOptions{})
			return w.Digest, err
		}},
	}
	var first map[string]fs.FileMode // the modes the first verb of the tree publishes
	for i, v := range verbs {
		id := int64(i + 1)
		for round := range 2 { // a first write, then a rewrite
			got, err := v.write(id)
			if err != nil {
				t.Fatalf("%s (round %d) on a setgid Root: %v", v.name, round, err)
			}
			if got != v.digest {
				t.Fatalf("%s: digest %v, want %v", v.name, got, v.digest)
			}
		}
		modes := modesUnder(t, l.Dir(id))
		for name, m := range modes {
			if m.IsDir() && m&fs.ModeSetgid == 0 {
				t.Errorf("%s: directory %s has mode %v, without the setgid bit Root passes on", v.name, name, m)
			}
			if !m.IsDir() && m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				t.Errorf("%s: file %s has mode %v", v.name, name, m)
			}
		}
		if v.digest != want {
			continue // the file modes of Files differ from the tree's
		}
		if first == nil {
			first = modes
			continue
		}
		for name, m := range first {
			if modes[name] != m {
				t.Errorf("%s: %s has mode %v, WriteStream gives it %v", v.name, name, modes[name], m)
			}
		}
		if len(modes) != len(first) {
			t.Errorf("%s published %d entries, WriteStream %d", v.name, len(modes), len(first))
		}
	}
	settle(t, l)
	if left := leftovers(t, l.Root); len(left) != 0 {
		t.Fatalf("left in Root: %v", left)
	}
}

// TestSetgidRootRefusesTheCallersBits: on a setgid Root as on any other,
// the setuid, setgid and sticky bits the caller sets are refused by every
// verb, naming the entry, and nothing is left: a setgid bit on a file, or
// on a directory whose parent does not have it, is the caller's.
func TestSetgidRootRefusesTheCallersBits(t *testing.T) {
	ctx := context.Background()
	for _, setgidRoot := range []bool{true, false} {
		var l Layout[int64]
		if setgidRoot {
			l = setgidLayout(t)
		} else {
			l = genLayout(t)
		}
		mustWrite(t, l, 1, Files{"keep.txt": []byte("kept")})
		before := rootEntries(t, l.Root)
		chmodFill := func(mk func(dir *os.Root) error, name string, mode fs.FileMode) func(context.Context, *os.Root) error {
			return func(_ context.Context, dir *os.Root) error {
				if err := dir.WriteFile("f.txt", []byte("x"), 0o644); err != nil {
					return err
				}
				if err := mk(dir); err != nil {
					return err
				}
				return dir.Chmod(name, mode)
			}
		}
		none := func(*os.Root) error { return nil }
		mkdir := func(name string) func(*os.Root) error {
			return func(dir *os.Root) error { return dir.MkdirAll(name, 0o755) }
		}
		cases := []struct {
			name  string // the entry refused
			write func(id int64) error
		}{
			{"f.txt", func(id int64) error {
				_, err := l.WriteStream(ctx, id, chmodFill(none, "f.txt", 0o644|fs.ModeSetgid), StreamOptions{})
				return err
			}},
			{"f.txt", func(id int64) error {
				_, err := l.WriteStream(ctx, id, chmodFill(none, "f.txt", 0o755|fs.ModeSetuid), StreamOptions{})
				return err
			}},
			{".", func(id int64) error {
				_, err := l.WriteStream(ctx, id, chmodFill(none, ".", 0o755|fs.ModeSticky), StreamOptions{})
				return err
			}},
			{"d", func(id int64) error {
				_, err := l.WriteStream(ctx, id, chmodFill(mkdir("d"), "d", 0o755|fs.ModeSetuid|fs.ModeSetgid), StreamOptions{})
				return err
			}},
			{"x/y", func(id int64) error {
				// x loses the bit; y, made in x, could not have it from x.
				fill := func(_ context.Context, dir *os.Root) error {
					if err := dir.Mkdir("x", 0o755); err != nil {
						return err
					}
					if err := dir.Chmod("x", 0o755); err != nil {
						return err
					}
					if err := dir.Mkdir("x/y", 0o755); err != nil {
						return err
					}
					return dir.Chmod("x/y", 0o755|fs.ModeSetgid)
				}
				_, err := l.WriteStream(ctx, id, fill, StreamOptions{})
				return err
			}},
			{"d", func(id int64) error {
				fsys := fstest.MapFS{"d": {Mode: fs.ModeDir | fs.ModeSetgid | 0o755}, "d/f": {Data: []byte("x")}}
				_, err := l.CopyFS(ctx, id, fsys, StreamOptions{})
				return err
			}},
			{"f", func(id int64) error {
				fsys := fstest.MapFS{"f": {Data: []byte("x"), Mode: fs.ModeSetuid | 0o755}}
				_, err := l.CopyFS(ctx, id, fsys, StreamOptions{})
				return err
			}},
			{"f", func(id int64) error {
				fsys := fstest.MapFS{"f": {Data: []byte("x"), Mode: fs.ModeSetgid | 0o644}}
				_, err := l.CopyFS(ctx, id, fsys, StreamOptions{})
				return err
			}},
		}
		for i, c := range cases {
			for _, id := range []int64{1, 2} { // a rewrite and a first write
				err := c.write(id)
				var ne *NameError
				if !errors.As(err, &ne) || ne.Name != c.name {
					t.Fatalf("setgid Root %v, case %d, ID %d: got %v, want a *NameError naming %q", setgidRoot, i, id, err, c.name)
				}
				settle(t, l)
				if got := rootEntries(t, l.Root); !slices.Equal(got, before) {
					t.Fatalf("setgid Root %v, case %d: Root holds %v, before %v", setgidRoot, i, got, before)
				}
				if f := readTree(t, l.Dir(1)); !sameFiles(f, Files{"keep.txt": []byte("kept")}) {
					t.Fatalf("setgid Root %v, case %d: ID 1 holds %v", setgidRoot, i, f)
				}
			}
		}
	}
}

// TestSetgidRootIrregularAndLinks: on a setgid Root, CopyFS of a
// directory holding a named pipe is refused naming it, and nothing is
// published; a streamed empty directory, which gets the bit, is
// published; without the pipe, the tree copies, its link and its nested
// directories included.
func TestSetgidRootIrregularAndLinks(t *testing.T) {
	l := setgidLayout(t)
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a", "b", "f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/f", filepath.Join(src, "a", "l")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, "a", "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := l.CopyFS(ctx, 1, os.DirFS(src), StreamOptions{})
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != "a/pipe" {
		t.Fatalf("CopyFS of a tree with a named pipe = %v, want a *NameError naming a/pipe", err)
	}
	_, err = l.WriteStream(ctx, 1, func(_ context.Context, dir *os.Root) error {
		return dir.Mkdir("d", 0o755) // it gets the bit from the staging directory
	}, StreamOptions{})
	if err != nil {
		t.Fatalf("WriteStream of an empty setgid directory: %v", err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
		t.Fatalf("Root holds %v", got)
	}
	if err := os.Remove(filepath.Join(src, "a", "pipe")); err != nil {
		t.Fatal(err)
	}
	w, err := l.CopyFS(ctx, 2, os.DirFS(src), StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := treeDigest(Tree{"a/b/f": {Data: []byte("f")}, "a/l": {Data: []byte("b/f"), Mode: fs.ModeSymlink}})
	if w.Digest != want {
		t.Fatalf("digest %v, want %v", w.Digest, want)
	}
	if target, err := os.Readlink(filepath.Join(l.Dir(2), "a", "l")); err != nil || target != "b/f" {
		t.Fatalf("link = %q, %v", target, err)
	}
}
