//go:build unix

package dirlife

import (
	"io/fs"
	"syscall"
)

// deviceOf returns the device that holds the file fi describes.
func deviceOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
