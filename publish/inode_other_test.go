//go:build !unix

package publish_test

import "io/fs"

func inodeOf(fs.FileInfo) uint64 { return 0 }
