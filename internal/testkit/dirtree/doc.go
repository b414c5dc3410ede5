// Package dirtree reads a directory tree back for the tests that check
// what was written: [Walk] visits every entry under a directory by its
// slash-separated path, with what Lstat says of it, and [Read] returns
// the regular files under it and refuses anything else. Both only read;
// they are safe for concurrent use, and a tree changed while they read it
// is read as it then was.
package dirtree
