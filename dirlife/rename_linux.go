//go:build linux

package dirlife

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange atomically swaps the entries a and b of dir.
func exchange(dir *os.File, a, b string) error {
	return renameat2(dir, a, b, unix.RENAME_EXCHANGE)
}

// renameNoReplace renames a to b in dir, failing with EEXIST when b exists.
func renameNoReplace(dir *os.File, a, b string) error {
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

// unsupported reports whether err says the filesystem or kernel lacks the
// renameat2 flag asked for.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) ||
		errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}

// exists reports whether err says the target exists.
func exists(err error) bool {
	return errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY)
}
