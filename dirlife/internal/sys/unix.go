//go:build unix

package sys

import (
	"io"
	"io/fs"
	"os"
	"reflect"
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

// SyncOpenFlag is how a staged file is opened to be read back and synced:
// fsync needs no write access here.
const SyncOpenFlag = os.O_RDONLY

// LinkCount returns the number of hard links of the file fi describes,
// where the system tells it.
func LinkCount(fi fs.FileInfo) (uint64, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink), true
	}
	return 0, false
}

// StampOf returns the stamp of the regular file fi describes: no inode
// nor change time where the system does not tell them.
func StampOf(fi fs.FileInfo) Stamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Perm: fi.Mode().Perm()}
	}
	return Stamp{Ino: uint64(st.Ino), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: ctimeOf(st), Perm: fs.FileMode(st.Mode & 0o7777)}
}

// ctimeField is the index of the field of syscall.Stat_t that holds the
// change time, which systems name Ctim or Ctimespec, or nil where it holds
// none.
var ctimeField = func() []int {
	t := reflect.TypeFor[syscall.Stat_t]()
	for _, name := range []string{"Ctim", "Ctimespec"} {
		if f, ok := t.FieldByName(name); ok && f.Type == reflect.TypeFor[syscall.Timespec]() {
			return f.Index
		}
	}
	return nil
}()

// ctimeOf returns the change time st tells, in nanoseconds since the Unix
// epoch, or zero where it tells none: a layout under Link then reads
// every file before it links it.
func ctimeOf(st *syscall.Stat_t) int64 {
	if ctimeField == nil {
		return 0
	}
	return reflect.ValueOf(st).Elem().FieldByIndex(ctimeField).Addr().Interface().(*syscall.Timespec).Nano()
}

// HardLinks reports whether the system has the hard links a layout's Link
// needs.
const HardLinks = true

// ErrNoLinks is never returned here.
var ErrNoLinks error

// LinkAt makes dstBase in directory dst a hard link to srcBase in
// directory src (not following a symbolic link).
func LinkAt(src *os.File, srcBase string, dst *os.File, dstBase string) error {
	return unix.Linkat(int(src.Fd()), srcBase, int(dst.Fd()), dstBase, 0)
}

// RenameAt renames from to to, both in directory dir.
func RenameAt(dir *os.File, from, to string) error {
	return unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to)
}

// UnlinkAt removes the file base of directory dir.
func UnlinkAt(dir *os.File, base string) error {
	return unix.Unlinkat(int(dir.Fd()), base, 0)
}

// StatAt returns the stamp of base in directory dir, not following a
// symbolic link, and whether it is a regular file.
func StatAt(dir *os.File, base string) (Stamp, bool) {
	var st unix.Stat_t
	if unix.Fstatat(int(dir.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return Stamp{}, false
	}
	return unixStamp(&st)
}

func unixStamp(st *unix.Stat_t) (Stamp, bool) {
	return Stamp{Ino: uint64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Perm: fs.FileMode(st.Mode & 0o7777)},
		st.Mode&unix.S_IFMT == unix.S_IFREG
}

// A RawFile is a file open for reading by its descriptor alone, without
// the poller an os.File registers it with.
type RawFile int

// OpenAt opens base in directory dir for reading, refusing a symbolic
// link and, without waiting for a writer, a FIFO put in its place.
func OpenAt(dir *os.File, base string) (RawFile, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat", Path: base, Err: err}
		}
		return RawFile(fd), nil
	}
}

func (f RawFile) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f RawFile) Close() error { return unix.Close(int(f)) }

// Stamp returns the stamp of f, and whether it is a regular file.
func (f RawFile) Stamp() (Stamp, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f), &st) != nil {
		return Stamp{}, false
	}
	return unixStamp(&st)
}

// FSClock returns the clock of the filesystem of directory dir (the
// staged or verified one, which nothing else writes to) as it stamps a
// change: dir's change time once its access and modification times are
// set again to what they are, which moves nothing else. ok is false where
// that fails (a directory of another owner, a read-only filesystem): a
// walk then knows no file's bytes by its stamp.
func FSClock(dir *os.File) (now int64, ok bool) {
	fd := int(dir.Fd())
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0, false
	}
	if unix.UtimesNanoAt(fd, ".", []unix.Timespec{st.Atim, st.Mtim}, 0) != nil || unix.Fstat(fd, &st) != nil {
		return 0, false
	}
	return st.Ctim.Nano(), true
}
