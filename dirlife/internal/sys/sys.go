// Package sys holds the system calls a dirlife layout makes that differ
// between systems: the lock on a root, the identity and device of a
// directory, syncs, the atomic renames of Linux, extended attributes, and
// the stamps, hard links and raw reads of files that a layout's Link uses.
// There is one file per system (linux.go, darwin.go, windows.go, and
// other.go for the rest), besides unix.go for what every Unix shares and
// xattr.go for what Linux and macOS share; where a system lacks a call,
// its file says what stands in for it.
package sys

import "io/fs"

// A Key identifies a directory within the machine: its device and inode
// (on Windows, its volume serial number and file index).
type Key struct{ Dev, Ino uint64 }

// LockFile is the file in a root that Acquire locks where a directory
// cannot be locked (Windows).
const LockFile = ".dirlife-lock"

// A Stamp is what the system tells of a regular file: its inode (zero
// where the system tells none), size, modification and change times, and
// permission bits.
type Stamp struct {
	Ino   uint64
	Size  int64
	Mtime int64 // in nanoseconds since the Unix epoch
	Ctime int64 // in nanoseconds since the Unix epoch; zero where the system tells none
	Perm  fs.FileMode
}

// SameInode reports whether s and t are one inode of one size, mode and
// modification time: a link of the file s stamps, its change time moved
// by that link.
func (s Stamp) SameInode(t Stamp) bool {
	return s.Ino != 0 && s.Ino == t.Ino && s.Size == t.Size && s.Mtime == t.Mtime && s.Perm == t.Perm
}
