//go:build windows

package sys

import (
	"errors"
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

// SyncOpenFlag is how a staged file is opened to be read back and synced:
// FlushFileBuffers needs write access.
const SyncOpenFlag = os.O_RDWR

// LinkCount returns the number of hard links of the file fi describes,
// where the system tells it: a FileInfo here does not.
func LinkCount(fs.FileInfo) (uint64, bool) { return 0, false }

// StampOf returns the stamp of the regular file fi describes: no inode
// nor change time, which a FileInfo here does not tell.
func StampOf(fi fs.FileInfo) Stamp {
	return Stamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Perm: fi.Mode().Perm()}
}

// HardLinks reports whether the system has the hard links a layout's Link
// needs; a write or Verify under Link fails with ErrNoLinks where not.
const HardLinks = false

var ErrNoLinks = errors.New("dirlife: Layout.Link needs hard links, which this system lacks: leave Link nil")

func LinkAt(*os.File, string, *os.File, string) error { return ErrNoLinks }

func RenameAt(*os.File, string, string) error { return ErrNoLinks }

func UnlinkAt(*os.File, string) error { return ErrNoLinks }

func StatAt(*os.File, string) (Stamp, bool) { return Stamp{}, false }

type RawFile int

func OpenAt(*os.File, string) (RawFile, error) { return -1, ErrNoLinks }

func (RawFile) Read([]byte) (int, error) { return 0, ErrNoLinks }

func (RawFile) Close() error { return ErrNoLinks }

func (RawFile) Stamp() (Stamp, bool) { return Stamp{}, false }

// FSClock reports false: a walk here trusts no stamp.
func FSClock(*os.File) (int64, bool) { return 0, false }
