//go:build windows

package dirlife

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFileInRoot reports whether the system lock needs a file in Root. On
// Windows it does: LockFileEx locks byte ranges of files, not directories,
// so the lock is on the file .dirlife-lock in Root.
const lockFileInRoot = true

// sysLock is a held LockFileEx lock on the root's lock file.
type sysLock struct{ f *os.File }

// keyOf returns the volume serial number and file index of the open
// directory dir.
func keyOf(dir *os.File) (rootKey, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(dir.Fd()), &info); err != nil {
		return rootKey{}, &os.PathError{Op: "GetFileInformationByHandle", Path: dir.Name(), Err: err}
	}
	return rootKey{dev: uint64(info.VolumeSerialNumber), ino: uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow)}, nil
}

// acquireSysLock opens (creating) the lock file in r and locks its first
// byte in mode, blocking until it can.
func acquireSysLock(r *os.Root, _ *os.File, mode lockMode) (sysLock, error) {
	f, err := r.OpenFile(lockName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return sysLock{}, err
	}
	var flags uint32
	if mode == exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol); err != nil {
		f.Close()
		return sysLock{}, &os.PathError{Op: "LockFileEx", Path: lockName, Err: err}
	}
	return sysLock{f}, nil
}

// release unlocks and closes the lock file.
func (l sysLock) release() {
	if l.f != nil {
		l.f.Close() // closing the handle releases the lock
	}
}
