//go:build !unix

package dirlife

import (
	"io/fs"
	"os"
)

// syncOpenFlag is how a staged file is opened to be read back and synced:
// FlushFileBuffers needs write access.
const syncOpenFlag = os.O_RDWR

// linkCount returns the number of hard links of the file fi describes,
// where the system tells it: a FileInfo here does not.
func linkCount(fs.FileInfo) (uint64, bool) { return 0, false }

// fileStampOf returns the stamp of the regular file fi describes: no inode
// nor change time, which a FileInfo here does not tell.
func fileStampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), perm: fi.Mode().Perm()}
}
