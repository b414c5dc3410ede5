// Package sys holds the system calls a dirlife layout makes that differ
// between systems: the lock on a root, the identity and device of a
// directory, syncs, the atomic renames of Linux, and extended attributes.
// There is one file per system (linux.go, darwin.go, windows.go, and
// other.go for the rest), besides unix.go for what every Unix shares and
// xattr.go for what Linux and macOS share; where a system lacks a call,
// its file says what stands in for it.
package sys

// A Key identifies a directory within the machine: its device and inode
// (on Windows, its volume serial number and file index).
type Key struct{ Dev, Ino uint64 }

// LockFile is the file in a root that Acquire locks where a directory
// cannot be locked (Windows).
const LockFile = ".dirlife-lock"
