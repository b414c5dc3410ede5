package publish

import (
	"crypto/sha256"
	"io/fs"
	"testing"

	"leasekit.dev/dirlife"
)

// A linkIndex offers as the source of a file the newest indexed file of
// its content, size and permission bits, of a directory Found told of
// and Gone did not take back since; Found of a directory replaces what it
// held of it; linked counts the files a directory's write linked, and
// their bytes.
func TestLinkIndexPolicy(t *testing.T) {
	file := func(path, data string, perm fs.FileMode, linked bool) dirlife.File {
		return dirlife.File{Path: path, Sum: sha256.Sum256([]byte(data)), Size: int64(len(data)), Perm: perm, Linked: linked}
	}
	want := file("new", "same", 0o444, false)
	source := func(x *linkIndex, want dirlife.File) string {
		t.Helper()
		dir, from, ok := x.Source(want)
		if !ok {
			return ""
		}
		if from.Sum != want.Sum || from.Size != want.Size || from.Perm != want.Perm {
			t.Fatalf("Source(%s) offered %+v, of another content or mode", want.Path, from)
		}
		return dir + "/" + from.Path
	}
	x := new(linkIndex)
	if got := source(x, want); got != "" {
		t.Fatalf("the empty index offered %s", got)
	}
	x.Found("one", []dirlife.File{file("a", "same", 0o444, false), file("b", "other", 0o444, true)})
	x.Found("two", []dirlife.File{file("c", "same", 0o444, true), file("d", "same", 0o555, false)})
	for _, c := range []struct {
		want dirlife.File
		from string
	}{
		{want, "two/c"}, // the newest of two
		{file("new", "same", 0o555, false), "two/d"},
		{file("new", "other", 0o444, false), "one/b"},
		{file("new", "other", 0o555, false), ""}, // another mode
		{file("new", "samE", 0o444, false), ""},  // another content
	} {
		if got := source(x, c.want); got != c.from {
			t.Fatalf("Source(%q, %v) = %q, want %q", c.want.Sum[:2], c.want.Perm, got, c.from)
		}
	}
	for _, c := range []struct {
		dir   string
		files int
		bytes int64
	}{{"one", 1, int64(len("other"))}, {"two", 1, int64(len("same"))}, {"three", 0, 0}} {
		if files, bytes := x.linked(c.dir); files != c.files || bytes != c.bytes {
			t.Fatalf("linked(%s) = %d files, %d bytes, want %d, %d", c.dir, files, bytes, c.files, c.bytes)
		}
	}
	x.Gone("two")
	if got := source(x, want); got != "one/a" {
		t.Fatalf("after two is gone, Source offered %q, want one/a", got)
	}
	x.Found("one", []dirlife.File{file("e", "else", 0o444, false)}) // a rewrite of one
	if got := source(x, want); got != "" {
		t.Fatalf("after one was rewritten without it, Source offered %q", got)
	}
	if files, _ := x.linked("one"); files != 0 {
		t.Fatalf("the rewritten one linked %d files, want 0", files)
	}
	x.Found("two", []dirlife.File{file("f", "same", 0o444, false)})
	x.Found("one", []dirlife.File{file("g", "same", 0o444, false)}) // one, found again, is the newest
	if got := source(x, want); got != "one/g" {
		t.Fatalf("Source offered %q, want the newest one/g", got)
	}
	x.Gone("one")
	x.Gone("two")
	x.Gone("two") // twice: nothing
	if len(x.files) != 0 || len(x.dirs) != 0 {
		t.Fatalf("every directory gone, the index holds %d keys and %d directories", len(x.files), len(x.dirs))
	}
}
