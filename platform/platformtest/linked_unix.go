//go:build unix

package platformtest

import (
	"io/fs"
	"syscall"
)

// linked reports whether the directory fi describes, as read through an
// open handle, still has a name: a removed directory has no links left.
func linked(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 0
}
