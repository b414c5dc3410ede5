//go:build linux

package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLinkConfinement writes a Tree with one link, of any name and
// target, among fixed entries: either CopyFS refuses it with a
// NameError, or the published link resolves, as the system follows it, to
// an entry inside the directory.
func FuzzLinkConfinement(f *testing.F) {
	for _, seed := range [][2]string{
		{"l", "a/b/f"}, {"a/l", "b/f"}, {"a/b/l", "../../top"}, {"l", "/etc"}, {"l", ".."},
		{"a/l", "../../x"}, {"l", "s/.."}, {"l", "a/./b/../b/f"}, {"l", "l"}, {"a/b/l", "../.."},
		{"l", "up/.."}, {"l", "a/up/../.."}, {"l", ""}, {"l", "a\\b"}, {"l", "a//b"},
	} {
		f.Add(seed[0], seed[1])
	}
	root := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, name, target string) {
		tree := Tree{
			"a/b/f": {Data: []byte("f")},
			"top":   {Data: []byte("top")},
			"s":     {Data: []byte("."), Mode: fs.ModeSymlink},
			"a/up":  {Data: []byte(".."), Mode: fs.ModeSymlink},
		}
		if _, ok := tree[name]; ok {
			return
		}
		tree[name] = Entry{Data: []byte(target), Mode: fs.ModeSymlink}
		n++
		l := Layout[int64]{Root: filepath.Join(root, "root"), Codec: IntCodec[int64]{}, NoSync: true}
		w, err := l.CopyFS(context.Background(), int64(n), treeFS(tree), StreamOptions{})
		dir := w.Dir
		if err != nil {
			if !errors.Is(err, ErrInvalidName) {
				t.Fatalf("CopyFS: %v", err)
			}
			return
		}
		defer l.Prune()
		clean := filepath.Join(dir, filepath.FromSlash(filepath.Clean(name)))
		resolved, err := filepath.EvalSymlinks(clean)
		if err != nil {
			t.Fatalf("the published link %s -> %q does not resolve: %v", name, target, err)
		}
		realDir, _ := filepath.EvalSymlinks(dir)
		if resolved != realDir && !strings.HasPrefix(resolved, realDir+string(filepath.Separator)) {
			t.Fatalf("the published link %s -> %q resolves to %s, outside %s", name, target, resolved, realDir)
		}
	})
}
