// Package sys holds the system calls a dirlife layout makes that differ
// between systems, one file per system: the lock on a root, the identity
// and device of a directory, syncs, the atomic renames of Linux, and
// extended attributes. Where a system lacks a call, its file says what
// stands in for it.
package sys

// A Key identifies a directory within the machine: its device and inode
// (on Windows, its volume serial number and file index).
type Key struct{ Dev, Ino uint64 }

// LockFile is the file in a root that Lock locks where a directory cannot
// be locked (Windows).
const LockFile = ".dirlife-lock"
