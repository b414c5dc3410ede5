package publish

import "cmp"

// DigestFiles is the digest a Publisher gives files.
var DigestFiles = digestOf

// Disk is where a Publisher writes and removes directories.
type Disk = disk

// WithDisk returns opts with wrap wrapping the Publisher's disk, for tests
// that make a write or a removal fail or hang.
func WithDisk[K cmp.Ordered, A any, V comparable](opts Options[K, A, V], wrap func(Disk) Disk) Options[K, A, V] {
	opts.wrapDisk = wrap
	return opts
}
