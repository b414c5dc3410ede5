//go:build unix

package publish_test

import (
	"io/fs"
	"syscall"
)

func inodeOf(fi fs.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }

func linkCount(fi fs.FileInfo) uint64 { return uint64(fi.Sys().(*syscall.Stat_t).Nlink) }
