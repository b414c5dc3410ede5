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

// fileStampOf returns the stamp of the file fi describes: no inode where the
// system does not tell it.
func fileStampOf(fi fs.FileInfo) fileStamp {
	ino, _ := inodeOf(fi)
	return fileStamp{ino: ino, mtime: fi.ModTime().UnixNano()}
}

// inodeOf returns the inode number of the file fi describes, where the
// system tells it.
func inodeOf(fi fs.FileInfo) (uint64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), true
	}
	return 0, false
}
