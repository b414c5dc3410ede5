package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/sys"
)

// fakeMounts is a device seam: directories named in mounts are on device
// 1<<60, everything else where deviceOf puts it.
func fakeMounts(mounts ...string) func(fs.FileInfo) uint64 {
	return func(fi fs.FileInfo) uint64 {
		if slices.Contains(mounts, fi.Name()) {
			return 1 << 60
		}
		return sys.DeviceOf(fi)
	}
}

// pruneErr runs Prune, waits for its background removals and returns the
// errors of both.
func pruneErr(l Layout[int64], keep ...int64) error {
	err := l.Prune(keep...)
	return errors.Join(err, l.Settle(context.Background()))
}

// checkMountError fails unless err is or joins a MountError naming path.
func checkMountError(t *testing.T, err error, path string) {
	t.Helper()
	if !hasMountError(err, path) {
		t.Fatalf("error = %v, want a MountError naming %s", err, path)
	}
}

func hasMountError(err error, path string) bool {
	if me, ok := err.(*removal.MountError); ok {
		return strings.HasSuffix(me.Path, path) && strings.Contains(me.Error(), path) && errors.Is(me, ErrMountPoint)
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if hasMountError(e, path) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return hasMountError(u.Unwrap(), path)
	}
	return false
}

// TestMountBoundary: Prune and Reset never remove or descend into a
// directory on another device than Root (here by the device seam): they
// refuse with a MountError naming it, remove the rest, and what is on the
// other device survives.
func TestMountBoundary(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("mnt", "gen-9")
	mustWrite(t, l, 1, Files{"a": []byte("a"), "mnt/precious": []byte("other filesystem")})
	mustWrite(t, l, 2, Files{"b": []byte("b")})
	mustWrite(t, l, 9, Files{"precious": []byte("a mount point named like an ID")})

	err := pruneErr(l, 2)
	checkMountError(t, err, "mnt")
	checkMountError(t, err, "gen-9")
	if ids, _ := l.IDs(); !slices.Equal(ids, []int64{2, 9}) {
		t.Fatalf("IDs after Prune(2) = %v, want [2 9]: gen-9 is a mount point", ids)
	}
	var aside string
	for _, n := range leftovers(t, l.Root) {
		if strings.HasPrefix(n, asidePrefix) {
			aside = n
		}
	}
	if aside == "" {
		t.Fatalf("no aside tree for gen-1 left, root = %v", rootEntries(t, l.Root))
	}
	if got := readTree(t, filepath.Join(l.Root, aside)); !sameFiles(got, Files{"mnt/precious": []byte("other filesystem")}) {
		t.Fatalf("the aside tree holds %v, want only the mount's file", got)
	}

	err = l.Reset()
	checkMountError(t, err, "mnt")
	checkMountError(t, err, "gen-9")
	if got := readTree(t, filepath.Join(l.Root, aside)); !sameFiles(got, Files{"mnt/precious": []byte("other filesystem")}) {
		t.Fatalf("Reset removed across the mount: %v", got)
	}
	if got := readTree(t, l.Dir(9)); string(got["precious"]) != "a mount point named like an ID" {
		t.Fatalf("Reset removed a mount point: %v", got)
	}

	// Without the mounts, the next Prune removes what is left.
	l.devices = nil
	if err := pruneErr(l); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root = %v, want nothing", got)
	}
}

// TestRemovalFailureReported: a background removal that fails is reported
// once, by the next Prune or Settle, and what it left is removed by the
// next Prune.
func TestRemovalFailureReported(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("sub")
	mustWrite(t, l, 1, Files{"sub/f": nil})
	// The removal runs in the background: its failure is reported by the
	// Prune itself if it is over by then, else by Settle; once.
	checkMountError(t, pruneErr(l), "sub")
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("a second Settle = %v, want the failure reported once", err)
	}
	if len(leftovers(t, l.Root)) != 1 {
		t.Fatalf("root = %v, want the tree left", rootEntries(t, l.Root))
	}
	l.devices = nil
	if err := pruneErr(l); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root = %v, want nothing", got)
	}
}

// writeFile is os.WriteFile that fails the test.
func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSettleAfterReportedFailure: what a removal that failed left stays in
// Root after Settle, which does not name it again when the call that
// waited for it returned the failure already; the next Prune removes it.
func TestSettleAfterReportedFailure(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("sub")
	mustWrite(t, l, 1, Files{"sub/f": nil})
	checkMountError(t, l.Prune(), "sub")
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("Settle after the Prune that returned the failure = %v, want nil", err)
	}
	if left := leftovers(t, l.Root); len(left) != 1 {
		t.Fatalf("Root after Settle = %v, want the tree the failure left", rootEntries(t, l.Root))
	}
	l.devices = nil
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("Root = %v, want nothing", got)
	}
}
