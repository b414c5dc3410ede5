//go:build unix

package dirlife

import (
	"io/fs"
	"os"
	"syscall"
)

// syncOpenFlag is how a staged file is opened to be read back and synced:
// fsync needs no write access here.
const syncOpenFlag = os.O_RDONLY

// linkCount returns the number of hard links of the file fi describes,
// where the system tells it.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink), true
	}
	return 0, false
}

// fileStampOf returns the stamp of the regular file fi describes: no
// inode nor change time where the system does not tell them.
func fileStampOf(fi fs.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), perm: fi.Mode().Perm()}
	}
	return fileStamp{ino: uint64(st.Ino), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: ctimeOf(st), perm: fs.FileMode(st.Mode & 0o7777)}
}
