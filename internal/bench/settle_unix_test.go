//go:build unix

package bench

import "syscall"

// settle flushes every filesystem, so that a benchmark that writes to disk
// does not pay for the dirty data the one before it left.
func settle() { syscall.Sync() }
