package dirlife

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRootGuard: Prune, Reset and Write refuse unsafe and foreign roots
// with a clear error and delete nothing there; IDs, which only reads,
// refuses the unsafe ones.
func TestRootGuard(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("secret"), 0o600)
	os.WriteFile(filepath.Join(home, "gen-1"), []byte("looks like an ID"), 0o644)
	link := filepath.Join(base, "link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, []byte("x"), 0o644)

	cases := []struct {
		root string
		want error
	}{
		{"", ErrUnsafeRoot},
		{"/", ErrUnsafeRoot},
		{"//", ErrUnsafeRoot},
		{"/./", ErrUnsafeRoot},
		{link, ErrUnsafeRoot},
		{file, ErrUnsafeRoot},
		{home, ErrNotOwned},
	}
	for _, c := range cases {
		l := Layout[int64]{Root: c.root, Codec: IntCodec[int64]{Prefix: "gen-"}}
		ops := map[string]func() error{
			"prune": func() error { return l.Prune() },
			"reset": l.Reset,
			"write": func() error { _, err := l.Write(2, Files{"f": nil}); return err },
		}
		if c.want == ErrUnsafeRoot {
			ops["ids"] = func() error { _, err := l.IDs(); return err }
		}
		for op, call := range ops {
			err := call()
			var re *rootError
			if !errors.Is(err, c.want) || !errors.As(err, &re) || re.Root != c.root || re.Op != op || re.Rule == "" {
				t.Fatalf("%s(%q) = %v, want a rootError wrapping %v", op, c.root, err, c.want)
			}
		}
	}
	if got := readTree(t, home); len(got) != 2 || string(got[".ssh/id_ed25519"]) != "secret" {
		t.Fatalf("the foreign root changed: %v", got)
	}
	if names := rootEntries(t, home); slices.Contains(names, lockName) || slices.Contains(names, markerName) {
		t.Fatalf("a refused call left the layout's files in a foreign root: %v", names)
	}
}

func TestMissingRoot(t *testing.T) {
	l := genLayout(t)
	if err := l.Prune(1); err != nil {
		t.Fatalf("Prune on a missing root = %v, want nil", err)
	}
	if ids, err := l.IDs(); err != nil || ids != nil {
		t.Fatalf("IDs on a missing root = %v, %v", ids, err)
	}
	if _, err := os.Stat(l.Root); !os.IsNotExist(err) {
		t.Fatalf("Prune created the root: %v", err)
	}
	if err := l.Reset(); err != nil {
		t.Fatalf("Reset on a missing root = %v", err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("Reset left %v, want nothing", got)
	}
}

// TestEmptyRootIsClaimed: an existing empty directory becomes the layout's,
// recorded in an extended attribute: no entry in Root, after Write, Prune
// and Reset, but the IDs'.
func TestEmptyRootIsClaimed(t *testing.T) {
	l := genLayout(t)
	if err := os.Mkdir(l.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, l, 3, Files{"f": []byte("x")})
	mustWrite(t, l, 3, Files{"f": []byte("y")})
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-3"}) {
		t.Fatalf("root after Write = %v, want [gen-3]", got)
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root after Prune = %v, want nothing", got)
	}
	mustWrite(t, l, 4, Files{"f": []byte("x")})
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root after Reset = %v, want nothing", got)
	}
	d, err := os.Open(l.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if has, err := (Layout[int64]{}).hasOwnerAttr(d); !has || err != nil {
		t.Fatalf("the root's %s attribute: %v, %v", ownerAttr, has, err)
	}
}

// TestPlantedSymlinks: symbolic links planted under Root, as an ID's
// directory, as a staging directory or inside a published tree, never lead
// a write or a delete outside Root.
func TestPlantedSymlinks(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(outside, "sub"), 0o755)
	os.WriteFile(filepath.Join(outside, "sub", "precious"), []byte("keep"), 0o644)
	want := Files{"sub/precious": []byte("keep")}

	l := Layout[int64]{Root: filepath.Join(base, "root"), Codec: IntCodec[int64]{Prefix: "gen-"}}
	mustWrite(t, l, 1, Files{"m/f": []byte("one")})

	// An ID's directory replaced by a link to outside.
	os.Symlink(outside, filepath.Join(l.Root, "gen-2"))
	if ids, _ := l.IDs(); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("IDs() = %v, want [1]: a link is not a directory", ids)
	}
	mustWrite(t, l, 2, Files{"sub/precious": []byte("overwritten?")})
	if got := readTree(t, outside); !sameFiles(got, want) {
		t.Fatalf("Write through a planted ID link changed outside: %v", got)
	}
	if fi, err := os.Lstat(l.Dir(2)); err != nil || !fi.IsDir() {
		t.Fatalf("gen-2 after Write is %v, %v; want a real directory", fi, err)
	}

	// Links inside a published tree, and in place of a staging directory.
	os.Symlink(outside, filepath.Join(l.Dir(1), "m", "escape"))
	os.Symlink(filepath.Join(outside, "sub"), filepath.Join(l.Root, stagePrefix+"planted"))
	os.Symlink(outside, filepath.Join(l.Root, "gen-3"))
	mustWrite(t, l, 1, Files{"m/escape/sub/precious": []byte("through the link?")})
	if got := readTree(t, outside); !sameFiles(got, want) {
		t.Fatalf("Write over a tree holding a link changed outside: %v", got)
	}
	if err := l.Prune(1); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := readTree(t, outside); !sameFiles(got, want) {
		t.Fatalf("Prune followed a planted link: outside is %v", got)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
		t.Fatalf("root after Prune(1) = %v", got)
	}
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, outside); !sameFiles(got, want) {
		t.Fatalf("Reset followed a planted link: outside is %v", got)
	}

	// A Root whose marker is a link is not owned.
	l2 := Layout[int64]{Root: filepath.Join(base, "root2"), Codec: l.Codec}
	os.MkdirAll(l2.Root, 0o755)
	os.Symlink(filepath.Join(l.Root, markerName), filepath.Join(l2.Root, markerName))
	if err := l2.Prune(); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("Prune with a linked marker = %v, want ErrNotOwned", err)
	}
}

// TestCopyFSDir: CopyFS of an os.DirFS tree copies its files and
// directories, refuses an absolute link naming it and leaves the
// directory as it was, and refuses an empty tree.
func TestCopyFSDir(t *testing.T) {
	l := genLayout(t)
	ctx := context.Background()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "a", "b"), 0o755)
	os.MkdirAll(filepath.Join(src, "empty"), 0o755)
	os.WriteFile(filepath.Join(src, "top.cue"), []byte("top"), 0o644)
	os.WriteFile(filepath.Join(src, "a", "b", "deep.cue"), []byte("deep"), 0o644)
	if _, err := l.CopyFS(ctx, 5, os.DirFS(src), StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, l.Dir(5)); !sameFiles(got, Files{"top.cue": []byte("top"), "a/b/deep.cue": []byte("deep")}) {
		t.Fatalf("CopyFS wrote %v", got)
	}
	if fi, err := os.Stat(filepath.Join(l.Dir(5), "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("CopyFS left out the empty directory: %v", err)
	}

	os.Symlink("/etc/passwd", filepath.Join(src, "a", "link"))
	_, err := l.CopyFS(ctx, 5, os.DirFS(src), StreamOptions{})
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != "a/link" {
		t.Fatalf("CopyFS with an absolute symlink = %v, want a NameError naming a/link", err)
	}
	if got := readTree(t, l.Dir(5)); len(got) != 2 {
		t.Fatalf("a refused CopyFS changed the directory: %v", got)
	}
	if _, err := l.CopyFS(ctx, 6, os.DirFS(t.TempDir()), StreamOptions{}); !errors.Is(err, ErrNoFiles) {
		t.Fatalf("CopyFS of an empty tree = %v, want ErrNoFiles", err)
	}
}

// TestNoCodec: a Layout without a Codec refuses, and touches nothing.
func TestNoCodec(t *testing.T) {
	l := Layout[int64]{Root: filepath.Join(t.TempDir(), "root")}
	if _, err := l.Write(1, Files{"f": nil}); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("Write = %v, want ErrNoCodec", err)
	}
	if _, err := l.CopyFS(context.Background(), 1, os.DirFS(t.TempDir()), StreamOptions{}); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("CopyFS = %v, want ErrNoCodec", err)
	}
	if _, err := l.IDs(); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("IDs = %v, want ErrNoCodec", err)
	}
	if err := l.Prune(); !errors.Is(err, ErrNoCodec) {
		t.Fatalf("Prune = %v, want ErrNoCodec", err)
	}
	if _, err := os.Stat(l.Root); !os.IsNotExist(err) {
		t.Fatalf("a refused call created the root: %v", err)
	}
}

// TestResetWithoutCodec: Reset needs no Codec: it empties Root (also of
// what looks like IDs) and creates it when missing.
func TestResetWithoutCodec(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 1, Files{"m/f": []byte("x")})
	mustWrite(t, l, 2, Files{"f": []byte("y")})
	os.WriteFile(filepath.Join(l.Root, "stray"), nil, 0o644)
	bare := Layout[int64]{Root: l.Root}
	if err := bare.Reset(); err != nil {
		t.Fatalf("Reset without a Codec = %v", err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root after Reset = %v, want nothing", got)
	}
	missing := Layout[int64]{Root: filepath.Join(t.TempDir(), "new")}
	if err := missing.Reset(); err != nil {
		t.Fatalf("Reset of a missing root without a Codec = %v", err)
	}
	if fi, err := os.Stat(missing.Root); err != nil || !fi.IsDir() {
		t.Fatalf("Reset did not create the root: %v", err)
	}
}
