//go:build linux

package sys

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errNoAttr is what fgetxattr(2) returns for an attribute a file lacks.
const errNoAttr = unix.ENODATA

// Exchange atomically swaps the entries a and b of dir.
func Exchange(dir *os.File, a, b string) error {
	return renameat2(dir, a, b, unix.RENAME_EXCHANGE)
}

// RenameNoReplace renames a to b in dir, failing with EEXIST when b exists.
func RenameNoReplace(dir *os.File, a, b string) error {
	return renameat2(dir, a, b, unix.RENAME_NOREPLACE)
}

func renameat2(dir *os.File, a, b string, flags uint) error {
	fd := int(dir.Fd())
	for {
		err := unix.Renameat2(fd, a, fd, b, flags)
		if err != unix.EINTR {
			if err != nil {
				return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
			}
			return nil
		}
	}
}

// Unsupported reports whether err says the filesystem or kernel lacks the
// renameat2 flag asked for.
func Unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) ||
		errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}

// Exists reports whether err says the target exists.
func Exists(err error) bool {
	return errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY)
}

// HaveSyncfs reports whether Syncfs is available.
const HaveSyncfs = true

// Syncfs flushes the filesystem that holds dir. Since Linux 5.8 it reports
// writeback errors on that filesystem.
func Syncfs(dir *os.File) error {
	return unix.Syncfs(int(dir.Fd()))
}

// IsMountRoot reports whether the open directory d is the root of a
// mount: a bind mount of a directory of a root's own filesystem has the
// root's device number, and only this tells it. Where the kernel cannot
// tell (before Linux 5.8), it reports false: the device check alone
// applies.
func IsMountRoot(d *os.File) (bool, error) {
	var st unix.Statx_t
	var err error
	for {
		err = unix.Statx(int(d.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, 0, &st)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.ENOSYS:
		return false, nil
	case err != nil:
		return false, &os.PathError{Op: "statx", Path: d.Name(), Err: err}
	}
	return st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
}
