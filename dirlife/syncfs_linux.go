//go:build linux

package dirlife

import (
	"os"

	"golang.org/x/sys/unix"
)

const haveSyncfs = true

// syncfs flushes the filesystem that holds dir. Since Linux 5.8 it reports
// writeback errors on that filesystem.
func syncfs(dir *os.File) error {
	return unix.Syncfs(int(dir.Fd()))
}
