package dirlife

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"leasekit.dev/dirlife/internal/names"
)

// A hostileFS is a sane tree (a MapFS) whose directory at lists one more
// entry, named name, a directory or a file as dir says: a name no real
// filesystem lists. It counts the listings of each directory and fails
// one listed more than maxListings times, so that a walk that loops ends
// with an error rather than a stack overflow.
type hostileFS struct {
	fstest.MapFS
	at, name string
	dir      bool

	mu       sync.Mutex
	listings map[string]int
}

const maxListings = 64

var errLooped = errors.New("the copy listed one directory over and over")

func (h *hostileFS) ReadDir(name string) ([]fs.DirEntry, error) {
	h.mu.Lock()
	h.listings[name]++
	n := h.listings[name]
	h.mu.Unlock()
	if n > maxListings {
		return nil, fmt.Errorf("%w: %q", errLooped, name)
	}
	entries, err := h.MapFS.ReadDir(name)
	if err != nil || name != h.at {
		return entries, err
	}
	return append(entries, hostileEntry{h.name, h.dir}), nil
}

// A hostileEntry is a directory entry with any name.
type hostileEntry struct {
	name string
	dir  bool
}

func (e hostileEntry) Name() string { return e.name }
func (e hostileEntry) IsDir() bool  { return e.dir }
func (e hostileEntry) Type() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e hostileEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e hostileEntry) Size() int64                { return 1 }
func (e hostileEntry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (e hostileEntry) ModTime() time.Time { return time.Time{} }
func (e hostileEntry) Sys() any           { return nil }

// TestCopyFSRefusesNamesThatAreNotOneElement: an fs.FS entry whose name
// is empty, "." or "..", or holds a slash, in the root or deeper, is
// refused by CopyFS with a *NameError naming it as listed and the rule,
// and nothing is left behind: no staging directory, no ID directory, and
// an ID already there is as it was. No walk loops.
func TestCopyFSRefusesNamesThatAreNotOneElement(t *testing.T) {
	l := genLayout(t)
	kept := Files{"keep.txt": []byte("kept")}
	mustWrite(t, l, 1, kept)
	before := rootEntries(t, l.Root)
	ctx := context.Background()
	for _, name := range []string{"", ".", "..", "x/y", "/abs", "sub/"} {
		for _, at := range []string{".", "sub", "sub/deeper"} {
			for _, dir := range []bool{true, false} {
				fsys := &hostileFS{
					MapFS: fstest.MapFS{
						"a.txt":                {Data: []byte("a")},
						"sub/b.txt":            {Data: []byte("b")},
						"sub/deeper/c.txt":     {Data: []byte("c")},
						"x/y":                  {Data: []byte("y")},
						"sub/deeper/x/y":       {Data: []byte("y")},
						"sub/x/y":              {Data: []byte("y")},
						"sub/deeper/more/d.md": {Data: []byte("d")},
					},
					at: at, name: name, dir: dir, listings: map[string]int{},
				}
				listed := name
				if at != "." {
					listed = at + "/" + name
				}
				for _, id := range []int64{1, 2} {
					_, err := l.CopyFS(ctx, id, fsys, StreamOptions{})
					what := fmt.Sprintf("entry %q in %q (directory %v), ID %d", name, at, dir, id)
					if errors.Is(err, errLooped) {
						t.Fatalf("%s: %v", what, err)
					}
					var ne *NameError
					if !errors.As(err, &ne) {
						t.Fatalf("%s: got %v, want a *NameError", what, err)
					}
					if ne.Name != listed || !strings.Contains(ne.Rule, "one path element") || !strings.Contains(ne.Rule, fmt.Sprintf("%q", name)) {
						t.Fatalf("%s: got %v (name %q), want it named %q with the rule", what, err, ne.Name, listed)
					}
					if got := rootEntries(t, l.Root); !slices.Equal(got, before) {
						t.Fatalf("%s: Root holds %v, before %v", what, got, before)
					}
					if f := readTree(t, l.Dir(1)); !sameFiles(f, kept) {
						t.Fatalf("%s: ID 1 holds %v", what, f)
					}
				}
			}
		}
	}
	// The tree without the hostile entry copies.
	if _, err := l.CopyFS(ctx, 2, fstest.MapFS{"a.txt": {Data: []byte("a")}, "sub/b.txt": {Data: []byte("b")}}, StreamOptions{}); err != nil {
		t.Fatal(err)
	}
}

// endlessFS is a tree whose every directory holds a directory named with
// 200 d's and a file "f", with no end.
type endlessFS struct{}

func (endlessFS) Open(name string) (fs.File, error) {
	if path.Base(name) == "f" {
		return fstest.MapFS{"f": {Data: []byte("f")}}.Open("f")
	}
	return fstest.MapFS{endlessDir + "/f": {Data: []byte("f")}}.Open(".")
}

var endlessDir = strings.Repeat("d", 200)

func (endlessFS) ReadDir(string) ([]fs.DirEntry, error) {
	return fstest.MapFS{endlessDir + "/x": {}, "f": {Data: []byte("f")}}.ReadDir(".")
}

// TestCopyFSEndlessTree: a tree with no end is refused once its paths
// pass the layout's limit, with a *NameError, and nothing is left.
func TestCopyFSEndlessTree(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 1, Files{"keep.txt": []byte("kept")})
	before := rootEntries(t, l.Root)
	_, err := l.CopyFS(context.Background(), 2, endlessFS{}, StreamOptions{})
	var ne *NameError
	if !errors.As(err, &ne) || len(ne.Name) <= names.MaxPath {
		t.Fatalf("CopyFS of an endless tree = %v, want a *NameError for a path past %d bytes", err, names.MaxPath)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, before) {
		t.Fatalf("Root holds %v, before %v", got, before)
	}
}
