// Package gentree is a generated tree of files for benchmarks and memory
// measurements: a [Tree] of any number of files and total size, 100 to a
// directory, whose bytes are computed from each file's index and offset
// and never held in memory. A Tree is an fs.FS to copy from and can write
// itself through an os.Root; [Measure] counts what a write left.
//
// A Tree is a plain value, safe for concurrent use; each file opened from
// it is read by one goroutine.
package gentree
