//go:build !windows

package dirlife

import "os"

// syncDirFile makes the entries of the open directory d durable.
func syncDirFile(d *os.File) error { return d.Sync() }
