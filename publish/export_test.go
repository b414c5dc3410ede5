package publish

import (
	"cmp"

	"leasekit.dev/dirlife"
)

// digestOf is the digest l gives files, as a Publisher with l's options
// computes it; the zero Digest for files a Publish refuses.
func digestOf(l dirlife.Layout[string], files dirlife.Files) dirlife.Digest {
	d, err := l.DigestFiles(files)
	if err != nil {
		return dirlife.Digest{}
	}
	return d
}

// DigestFiles is the digest a Publisher gives files.
func DigestFiles(files dirlife.Files) dirlife.Digest {
	return digestOf(dirlife.Layout[string]{}, files)
}

// DigestLinked is the digest a Publisher gives files under LinkUnchanged.
func DigestLinked(files dirlife.Files) dirlife.Digest {
	return digestOf(dirlife.Layout[string]{Link: new(linkIndex)}, files)
}

// Disk is where a Publisher writes and removes directories.
type Disk = disk

// WithDisk returns opts with wrap wrapping the Publisher's disk, for tests
// that make a write or a removal fail or hang.
func WithDisk[K cmp.Ordered, A any, V comparable](opts Options[K, A, V], wrap func(Disk) Disk) Options[K, A, V] {
	opts.wrapDisk = wrap
	return opts
}
