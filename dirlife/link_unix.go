//go:build unix

package dirlife

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// hardLinks reports whether the system has the hard links Layout.Link
// needs.
const hardLinks = true

// errNoLinks is never returned here.
var errNoLinks error

// linkAt makes dstBase in directory dst a hard link to srcBase in
// directory src (not following a symbolic link).
func linkAt(src *os.File, srcBase string, dst *os.File, dstBase string) error {
	return unix.Linkat(int(src.Fd()), srcBase, int(dst.Fd()), dstBase, 0)
}

// renameAt renames from to to, both in directory dir.
func renameAt(dir *os.File, from, to string) error {
	return unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to)
}

// unlinkAt removes the file base of directory dir.
func unlinkAt(dir *os.File, base string) error {
	return unix.Unlinkat(int(dir.Fd()), base, 0)
}

// isFile reports whether base in directory dir is a regular file stamped
// at, of size bytes and exactly the permission bits perm.
func isFile(dir *os.File, base string, at fileStamp, size int64, perm fs.FileMode) bool {
	var st unix.Stat_t
	if unix.Fstatat(int(dir.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && uint64(st.Ino) == at.ino && st.Mtim.Nano() == at.mtime && st.Size == size &&
		fs.FileMode(st.Mode&0o7777) == perm
}
