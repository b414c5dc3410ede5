//go:build !unix

package modread

import "os"

// openFlags opens a file for reading. Where there is no O_NONBLOCK, a
// file is described before it is opened, and only a regular file or a
// directory is.
const openFlags = os.O_RDONLY
