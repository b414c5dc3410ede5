package modread

import (
	"errors"
	"io/fs"
	"os"
	"testing/fstest"
)

// A Source is where the bytes of a module come from: a directory
// opened as an os.Root (see rootSource), or an instance's files in memory.
// Names are slash-separated paths in the module, "." for its root.
type Source interface {
	// Lstat describes name, not following a final symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// Stat describes name, following symbolic links that stay in the
	// source; it fails for one that leads out.
	Stat(name string) (fs.FileInfo, error)
	// Open opens name for reading; opening does not block, whatever name
	// is.
	Open(name string) (fs.File, error)
}

// rootSource is a module directory opened as an os.Root: no name leads
// out of it, by a symbolic link or otherwise.
type rootSource struct{ root *os.Root }

func (s rootSource) Lstat(name string) (fs.FileInfo, error) { return s.root.Lstat(name) }
func (s rootSource) Stat(name string) (fs.FileInfo, error)  { return s.root.Stat(name) }

// Open opens name without blocking, even if it has turned into a named
// pipe since it was described: see openFlags.
func (s rootSource) Open(name string) (fs.File, error) {
	return s.root.OpenFile(name, openFlags, 0)
}

// OpenDir opens the directory dir, an absolute path, as the source
// of a module, and returns a function that closes it. Tests replace it to
// reach a loader blocked in a read.
var OpenDir = func(dir string) (Source, func(), error) {
	// Described first: opening a named pipe would block.
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		return nil, nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	return rootSource{root}, func() { root.Close() }, nil
}

// memSource is an instance's files in memory: no links, nothing
// irregular, nothing that blocks.
type memSource struct{ fsys fstest.MapFS }

func (s memSource) Lstat(name string) (fs.FileInfo, error) { return fs.Stat(s.fsys, name) }
func (s memSource) Stat(name string) (fs.FileInfo, error)  { return fs.Stat(s.fsys, name) }
func (s memSource) Open(name string) (fs.File, error)      { return s.fsys.Open(name) }

// Memory returns the files of fsys, a module in memory, as a Source.
func Memory(fsys fstest.MapFS) Source { return memSource{fsys} }
