//go:build unix

package sys

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStampsAgree: the stamp of a file, as StampOf tells it from
// os.Lstat and as StatAt and a RawFile tell it from the system, is one:
// the same inode, size, times and permission bits, and a change time
// where the system tells one.
func TestStampsAgree(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("stamp"), 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	at, ok := StatAt(d, "f")
	if !ok {
		t.Fatal("StatAt: not a regular file")
	}
	f, err := OpenAt(d, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, ok := f.Stamp()
	if !ok {
		t.Fatal("RawFile.Stamp: not a regular file")
	}
	if got := StampOf(fi); got != at || got != raw || at.Ctime == 0 {
		t.Fatalf("StampOf = %+v, StatAt = %+v, RawFile.Stamp = %+v: want one stamp, with a change time", got, at, raw)
	}
}
