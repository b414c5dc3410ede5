//go:build linux || darwin

package sys

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// GetAttr reads the extended attribute name of f into buf and returns its
// length, or false when f lacks it or it is longer than buf (not a value
// the caller wrote).
func GetAttr(f *os.File, name string, buf []byte) (int, bool, error) {
	for {
		n, err := unix.Fgetxattr(int(f.Fd()), name, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == errNoAttr || err == unix.ERANGE: // absent, or not our value
			return 0, false, nil
		case err != nil:
			return 0, false, &os.PathError{Op: "fgetxattr", Path: f.Name(), Err: err}
		}
		return n, true, nil
	}
}

// SetAttr sets the extended attribute name of f to value.
func SetAttr(f *os.File, name string, value []byte) error {
	for {
		err := unix.Fsetxattr(int(f.Fd()), name, value, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsetxattr", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// AttrUnsupported reports whether err says the filesystem holds no
// extended attributes (on Linux, of the user namespace on directories).
func AttrUnsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP)
}
