//go:build windows

package sys

import (
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// LockFileInRoot reports whether Acquire needs a file in the root. On Windows
// it does: LockFileEx locks byte ranges of files, not directories, so the
// lock is on the file LockFile in the root.
const LockFileInRoot = true

// A Lock is a held LockFileEx lock on the root's lock file.
type Lock struct{ f *os.File }

// KeyOf returns the volume serial number and file index of the open
// directory dir.
func KeyOf(dir *os.File) (Key, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(dir.Fd()), &info); err != nil {
		return Key{}, &os.PathError{Op: "GetFileInformationByHandle", Path: dir.Name(), Err: err}
	}
	return Key{Dev: uint64(info.VolumeSerialNumber), Ino: uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow)}, nil
}

// Acquire opens (creating) the lock file in r and locks its first byte,
// shared or exclusive, blocking until it can.
func Acquire(r *os.Root, _ *os.File, exclusive bool) (Lock, error) {
	f, err := r.OpenFile(LockFile, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return Lock{}, err
	}
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol); err != nil {
		f.Close()
		return Lock{}, &os.PathError{Op: "LockFileEx", Path: LockFile, Err: err}
	}
	return Lock{f}, nil
}

// Release unlocks and closes the lock file.
func (l Lock) Release() {
	if l.f != nil {
		l.f.Close() // closing the handle releases the lock
	}
}

// DeviceOf returns 0: a FileInfo on Windows carries no volume, so the
// comparison with a root's device is not made there.
func DeviceOf(fs.FileInfo) uint64 { return 0 }

// SyncDir does nothing on Windows, which has no way to flush a directory:
// NTFS journals its metadata, and a directory handle refuses
// FlushFileBuffers.
func SyncDir(*os.File) error { return nil }
