//go:build unix

package sys

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// LockFileInRoot reports whether Acquire needs a file in the root. On Unix it
// is flock(2) on the root's own descriptor: no entry.
const LockFileInRoot = false

// A Lock is a held flock(2) on a root directory's descriptor.
type Lock struct{ fd int }

// KeyOf returns the device and inode of the open directory dir.
func KeyOf(dir *os.File) (Key, error) {
	fi, err := dir.Stat()
	if err != nil {
		return Key{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Key{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// Acquire flocks dir, shared or exclusive, blocking until it can. flock
// locks belong to the open file description: two descriptors of one
// process exclude each other as two processes do.
func Acquire(_ *os.Root, dir *os.File, exclusive bool) (Lock, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	fd := int(dir.Fd())
	for {
		err := unix.Flock(fd, how)
		if err == nil {
			return Lock{fd}, nil
		}
		if err != unix.EINTR {
			return Lock{}, &os.PathError{Op: "flock", Path: dir.Name(), Err: err}
		}
	}
}

// Release does nothing: closing the descriptor drops the flock.
func (Lock) Release() {}

// DeviceOf returns the device that holds the file fi describes.
func DeviceOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// SyncDir makes the entries of the open directory d durable.
func SyncDir(d *os.File) error { return d.Sync() }
