//go:build !unix

package publish_test

import "io/fs"

func inodeOf(fs.FileInfo) uint64 { return 0 }

func linkCount(fs.FileInfo) uint64 { return 1 }
