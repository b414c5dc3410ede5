//go:build unix

package dirlife

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockFileInRoot reports whether the system lock needs a file in Root. On
// Unix it is flock(2) on Root's own descriptor: no entry.
const lockFileInRoot = false

// sysLock is a held flock(2) on a root directory's descriptor.
type sysLock struct{ fd int }

// keyOf returns the device and inode of the open directory dir.
func keyOf(dir *os.File) (rootKey, error) {
	fi, err := dir.Stat()
	if err != nil {
		return rootKey{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return rootKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// acquireSysLock flocks dir in mode, blocking until it can. flock locks
// belong to the open file description: two descriptors of one process
// exclude each other as two processes do.
func acquireSysLock(_ *os.Root, dir *os.File, mode lockMode) (sysLock, error) {
	how := unix.LOCK_SH
	if mode == exclusive {
		how = unix.LOCK_EX
	}
	fd := int(dir.Fd())
	for {
		err := unix.Flock(fd, how)
		if err == nil {
			return sysLock{fd}, nil
		}
		if err != unix.EINTR {
			return sysLock{}, &os.PathError{Op: "flock", Path: dir.Name(), Err: err}
		}
	}
}

// release does nothing: closing the descriptor drops the flock.
func (sysLock) release() {}
