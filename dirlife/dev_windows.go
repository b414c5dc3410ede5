//go:build windows

package dirlife

import "io/fs"

// deviceOf returns 0: a FileInfo on Windows carries no volume, so the
// comparison with Root's device is not made there.
func deviceOf(fs.FileInfo) uint64 { return 0 }
