//go:build linux

package dirlife

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"leasekit.dev/dirlife/internal/sys"
)

// TestRealMount: a tmpfs mounted under Root, inside an ID's directory and
// as an ID's directory, survives Prune and Reset, which refuse naming it.
// It needs the right to mount (root, or CAP_SYS_ADMIN).
func TestRealMount(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 1, Files{"a": []byte("a"), "mnt/.keep": nil})
	mustWrite(t, l, 9, Files{".keep": nil})
	inner, asID := filepath.Join(l.Dir(1), "mnt"), l.Dir(9)
	for _, dir := range []string{inner, asID} {
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("cannot mount a tmpfs here (%v): the device check is tested through its seam by TestMountBoundary", err)
		}
		t.Cleanup(func() { unmountUnder(l.Root) })
		writeFile(t, filepath.Join(dir, "precious"), []byte("on another filesystem"))
	}

	checkMountError(t, pruneErr(l), "mnt")
	checkMountError(t, l.Reset(), "gen-9")
	matches, _ := filepath.Glob(filepath.Join(l.Root, "*", "mnt", "precious"))
	if len(matches) != 1 {
		t.Fatalf("the inner mount's file: %v", matches)
	}
	for _, f := range []string{matches[0], filepath.Join(asID, "precious")} {
		if data, err := os.ReadFile(f); err != nil || string(data) != "on another filesystem" {
			t.Fatalf("%s = %q, %v", f, data, err)
		}
	}
}

// unmountUnder detaches every mount under root: Prune may have moved one
// along with its parent.
func unmountUnder(root string) {
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for line := range strings.Lines(string(mounts)) {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], root+"/") {
			unix.Unmount(f[1], unix.MNT_DETACH)
		}
	}
}

// TestBindMount: a directory of Root's own filesystem bind-mounted under
// Root, inside an ID's directory and as an ID's directory, has Root's
// device number; Prune and Reset still never descend into it: the data
// it shows survives, and the inner mount is refused with a MountError
// naming it. It needs the right to mount.
func TestBindMount(t *testing.T) {
	l := genLayout(t)
	mustWrite(t, l, 1, Files{"a": []byte("a"), "mnt/.keep": nil})
	mustWrite(t, l, 9, Files{".keep": nil})
	inner, asID := filepath.Join(l.Dir(1), "mnt"), l.Dir(9)
	var sources []string
	for _, dir := range []string{inner, asID} {
		src := t.TempDir() // beside Root, on its filesystem
		writeFile(t, filepath.Join(src, "precious"), []byte("bound from elsewhere"))
		if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("cannot bind-mount here (%v)", err)
		}
		t.Cleanup(func() { unmountUnder(l.Root) })
		sources = append(sources, src)
	}
	if sys.DeviceOf(statOf(t, sources[0])) != sys.DeviceOf(statOf(t, l.Root)) {
		t.Skip("the temporary directory and Root are on different filesystems")
	}

	checkMountError(t, pruneErr(l, 9), "mnt")
	if err := l.Reset(); err == nil || !strings.Contains(err.Error(), "gen-9") {
		t.Fatalf("Reset = %v, want an error naming gen-9", err)
	}
	for _, src := range sources {
		if data, err := os.ReadFile(filepath.Join(src, "precious")); err != nil || string(data) != "bound from elsewhere" {
			t.Fatalf("%s/precious = %q, %v: removed through a bind mount", src, data, err)
		}
	}
}

func statOf(t *testing.T, name string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
