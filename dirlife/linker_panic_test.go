//go:build unix

package dirlife

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"leasekit.dev/dirlife/internal/rootlock"
)

// A panicker is a Linker whose Found or Gone panics, as a Linker with a
// bug may.
type panicker struct {
	testLinker
	found, gone bool
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

// TestLinkerPanicReleasesTheLock: a Linker that panics in Found or Gone,
// which the layout calls holding Root's lock, has the call panic, and the
// lock is let go: the process holds no lock on Root afterwards, in
// process or on the system, and the next call runs.
func TestLinkerPanicReleasesTheLock(t *testing.T) {
	ctx := context.Background()
	files := Files{"a": []byte("a")}
	want, err := digestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		found, gone bool
		call        func(l Layout[int64])
	}{
		{"Prune's Gone", false, true, func(l Layout[int64]) { l.Prune(2) }},
		{"Reset's Gone", false, true, func(l Layout[int64]) { l.Reset() }},
		{"Write's Found", true, false, func(l Layout[int64]) { l.Write(2, files) }},
		{"Verify's Found", true, false, func(l Layout[int64]) { l.Verify(ctx, 1, Digest{}, Files{"a": []byte("b")}) }},
		{"Verify's Gone", false, true, func(l Layout[int64]) { l.Verify(ctx, 1, want, nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			x := new(panicker)
			l.Link = x
			mustWrite(t, l, 1, Files{"a": []byte("b")}) // Verify with want: a mismatch
			x.found, x.gone = c.found, c.gone
			func() {
				defer func() {
					if v := recover(); v == nil {
						t.Fatal("the Linker's panic did not reach the caller")
					}
				}()
				c.call(l)
			}()
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
			x.found, x.gone = false, false
			if err := l.Prune(1); err != nil {
				t.Fatal(err)
			}
		})
	}
}
