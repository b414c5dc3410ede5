//go:build linux

package dirlife

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
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
