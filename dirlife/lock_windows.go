//go:build windows

package dirlife

import (
	"os"

	"golang.org/x/sys/windows"
)

// rootLock is a held LockFileEx lock on the root's lock file.
type rootLock struct{ f *os.File }

// acquireLock opens (creating) the lock file in r and locks its first byte
// in mode, blocking until it can.
func acquireLock(r *os.Root, mode lockMode) (*rootLock, error) {
	f, err := r.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	var flags uint32
	if mode == exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "LockFileEx", Path: lockName, Err: err}
	}
	return &rootLock{f}, nil
}

// release unlocks and closes the lock file.
func (l *rootLock) release() {
	l.f.Close() // closing the handle releases the lock
}
