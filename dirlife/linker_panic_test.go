//go:build unix

package dirlife

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"

	"leasekit.dev/dirlife/internal/rootlock"
)

// A panicker is a Linker whose Source, Found or Gone panics, as a Linker with a
// bug may.
type panicker struct {
	testLinker
	source, found, gone bool
}

func (x *panicker) Source(want File) (string, File, bool) {
	if x.source {
		panic("Source")
	}
	return x.testLinker.Source(want)
}

func (x *panicker) Found(dir string, files []File) {
	if x.found {
		panic("Found")
	}
	x.testLinker.Found(dir, files)
}

func (x *panicker) Gone(dir string) {
	if x.gone {
		panic("Gone")
	}
	x.testLinker.Gone(dir)
}

// TestLinkerPanicReleasesTheLock: a Linker that panics in Source, Found
// or Gone, which the layout calls holding Root's lock, has the call panic,
// leaving no staging directory behind (what it set aside, the next Prune
// removes), and the lock is let go: the process holds no lock on Root
// afterwards, in process or on the system, and the next call runs.
func TestLinkerPanicReleasesTheLock(t *testing.T) {
	ctx := context.Background()
	files := Files{"a": []byte("a")}
	want, err := digestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                string
		source, found, gone bool
		call                func(l Layout[int64])
	}{
		{"Write's Source", true, false, false, func(l Layout[int64]) { l.Write(2, files) }},
		{"CopyFS's Source", true, false, false, func(l Layout[int64]) { l.CopyFS(ctx, 2, fstest.MapFS{"a": {Data: []byte("a")}}, StreamOptions{}) }},
		{"Prune's Gone", false, false, true, func(l Layout[int64]) { l.Prune(2) }},
		{"Reset's Gone", false, false, true, func(l Layout[int64]) { l.Reset() }},
		{"Write's Found", false, true, false, func(l Layout[int64]) { l.Write(2, files) }},
		{"Verify's Found", false, true, false, func(l Layout[int64]) { l.Verify(ctx, 1, Digest{}, Files{"a": []byte("b")}) }},
		{"Verify's Gone", false, false, true, func(l Layout[int64]) { l.Verify(ctx, 1, want, nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			x := new(panicker)
			l.Link = x
			mustWrite(t, l, 1, Files{"a": []byte("b")}) // Verify with want: a mismatch
			x.source, x.found, x.gone = c.source, c.found, c.gone
			func() {
				defer func() {
					if v := recover(); v == nil {
						t.Fatal("the Linker's panic did not reach the caller")
					}
				}()
				c.call(l)
			}()
			for _, n := range leftovers(t, l.Root) {
				if strings.HasPrefix(n, stagePrefix) {
					t.Fatalf("the call left its staging directory %s behind", n)
				}
			}
			if _, kept := rootlock.Registered(rootKeyOf(t, l.Root)); kept {
				t.Fatal("the process still holds state for Root: its lock is held")
			}
			d, err := os.Open(l.Root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatalf("Root's system lock is held after the panic: %v", err)
			}
			unix.Flock(int(d.Fd()), unix.LOCK_UN)
			x.source, x.found, x.gone = false, false, false
			if err := l.Prune(1); err != nil {
				t.Fatal(err)
			}
			if got := leftovers(t, l.Root); len(got) != 0 {
				t.Fatalf("the next Prune left %v behind", got)
			}
		})
	}
}
