//go:build windows

package dirlife

import "os"

// syncDirFile does nothing on Windows, which has no way to flush a
// directory: NTFS journals its metadata, and a directory handle refuses
// FlushFileBuffers.
func syncDirFile(*os.File) error { return nil }
