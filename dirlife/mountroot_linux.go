//go:build linux

package dirlife

import (
	"os"

	"golang.org/x/sys/unix"
)

// isMountRoot reports whether the open directory d is the root of a
// mount: a bind mount of a directory of Root's own filesystem has Root's
// device number, and only this tells it. Where the kernel cannot tell
// (before Linux 5.8), it reports false: the device check alone applies.
func isMountRoot(d *os.File) (bool, error) {
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
