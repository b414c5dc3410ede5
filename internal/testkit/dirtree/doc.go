// Package dirtree writes and reads back the directory trees of tests:
// [Write] writes files by slash-separated path, [Walk] visits every entry
// under a directory by that path, with what Lstat says of it, [Read]
// returns the regular files under it and refuses anything else, and
// [Names] lists a directory's entries. [MustWrite] and [MustNames] are the
// same in a test, ending it at an error, and [TempDir] is t.TempDir for a
// *rapid.T, which has none. All are safe for concurrent use; a tree
// changed while they read it is read as it then was.
package dirtree
