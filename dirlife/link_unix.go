//go:build unix

package dirlife

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// hardLinks reports whether the system has the hard links Layout.Link
// needs.
const hardLinks = true

// errNoLinks is never returned here.
var errNoLinks error

// linkAt makes dstBase in directory dst a hard link to srcBase in
// directory src (not following a symbolic link).
func linkAt(src *os.File, srcBase string, dst *os.File, dstBase string) error {
	return unix.Linkat(int(src.Fd()), srcBase, int(dst.Fd()), dstBase, 0)
}

// renameAt renames from to to, both in directory dir.
func renameAt(dir *os.File, from, to string) error {
	return unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to)
}

// unlinkAt removes the file base of directory dir.
func unlinkAt(dir *os.File, base string) error {
	return unix.Unlinkat(int(dir.Fd()), base, 0)
}

// statAt returns the stamp of base in directory dir, not following a
// symbolic link, and whether it is a regular file.
func statAt(dir *os.File, base string) (fileStamp, bool) {
	var st unix.Stat_t
	if unix.Fstatat(int(dir.Fd()), base, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return fileStamp{}, false
	}
	return unixStamp(&st)
}

func unixStamp(st *unix.Stat_t) (fileStamp, bool) {
	return fileStamp{ino: uint64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), perm: fs.FileMode(st.Mode & 0o7777)},
		st.Mode&unix.S_IFMT == unix.S_IFREG
}

// A rawFile is a file open for reading by its descriptor alone, without
// the poller an os.File registers it with.
type rawFile int

// openAt opens base in directory dir for reading, refusing a symbolic
// link and, without waiting for a writer, a FIFO put in its place.
func openAt(dir *os.File, base string) (rawFile, error) {
	for {
		fd, err := unix.Openat(int(dir.Fd()), base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "openat", Path: base, Err: err}
		}
		return rawFile(fd), nil
	}
}

func (f rawFile) Read(p []byte) (int, error) {
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

func (f rawFile) Close() error { return unix.Close(int(f)) }

// stamp returns the stamp of f, and whether it is a regular file.
func (f rawFile) stamp() (fileStamp, bool) {
	var st unix.Stat_t
	if unix.Fstat(int(f), &st) != nil {
		return fileStamp{}, false
	}
	return unixStamp(&st)
}

// fsClock returns the clock of the filesystem of directory dir (the
// staged or verified one, which nothing else writes to) as it stamps a
// change: dir's change time once its access and modification times are
// set again to what they are, which moves nothing else. ok is false where
// that fails (a directory of another owner, a read-only filesystem): a
// walk then knows no file's bytes by its stamp.
func fsClock(dir *os.File) (now int64, ok bool) {
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
