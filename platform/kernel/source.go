package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing/fstest"
)

// rootSource is a module directory opened as an os.Root: no name leads
// out of it, by a symbolic link or otherwise.
type rootSource struct{ root *os.Root }

func (s rootSource) lstat(name string) (fs.FileInfo, error) { return s.root.Lstat(name) }
func (s rootSource) stat(name string) (fs.FileInfo, error)  { return s.root.Stat(name) }

// open opens name without blocking, even if it has turned into a named
// pipe since it was described: see openFlags.
func (s rootSource) open(name string) (fs.File, error) {
	return s.root.OpenFile(name, openFlags, 0)
}

// openDirSource opens the directory dir, an absolute path, as the source
// of a module, and returns a function that closes it. Tests replace it to
// reach a loader blocked in a read.
var openDirSource = func(dir string) (fileSource, func(), error) {
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

func (s memSource) lstat(name string) (fs.FileInfo, error) { return fs.Stat(s.fsys, name) }
func (s memSource) stat(name string) (fs.FileInfo, error)  { return fs.Stat(s.fsys, name) }
func (s memSource) open(name string) (fs.File, error)      { return s.fsys.Open(name) }

// ErrFileRefused is the error a build or render returns, wrapped in a
// *FileError, for a file or directory in a module that the kernel does not
// read.
var ErrFileRefused = errors.New("kernel: file refused")

// A FileError reports a file or directory in a module that the kernel
// refuses to read: one that is not a regular file or directory, a
// symbolic link leading out of the module, or a directory of vendored
// packages. It is returned as it is, and nothing of the module is
// evaluated.
type FileError struct {
	Dir  string // the module's directory, "instance" for an instance's Files
	File string // the file or directory, slash-separated, relative to Dir
	Rule string // why it is refused: "is a named pipe (p---------), not a regular file", …
	Err  error  // the underlying error, if any
}

// Error names the module, the file and the rule.
func (e *FileError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("kernel: %s %s: %v", inModule(e.Dir, e.File), e.Rule, e.Err)
	}
	return fmt.Sprintf("kernel: %s %s", inModule(e.Dir, e.File), e.Rule)
}

// inModule names file, relative to the module directory dir, as an error
// shows it: "dir: file", or dir alone for the module itself.
func inModule(dir, file string) string {
	switch {
	case dir == "":
		return file
	case file == "":
		return dir
	}
	return dir + ": " + file
}

// Is reports whether target is ErrFileRefused.
func (e *FileError) Is(target error) bool { return target == ErrFileRefused }

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }
