package platformtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"leasekit.dev/platform/platformmodule"
)

// A dirHandle holds a leased directory open, as a render holds the
// platform's directory through an [os.Root] while it loads it. While the
// handle is open the directory's inode stays allocated, so its number
// cannot be given to another directory: a directory put at the same path
// later, even an identical copy, has another identity, which [os.SameFile]
// tells apart. Device and inode numbers compared across a removal would
// not do: a filesystem such as ext4 gives a freed inode number to the next
// directory it makes.
type dirHandle struct {
	path string
	dir  *os.File // the directory: its identity and its links
	root *os.Root // its tree, read as a render reads it
}

// openDir opens the directory at path. A path that is not a directory, or
// that names another directory by the time both handles are open, is an
// error.
func openDir(path string) (*dirHandle, error) {
	if path == "" {
		return nil, errors.New("the record names no directory")
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (%v)", path, fi.Mode().Type())
	}
	dir, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		dir.Close()
		return nil, err
	}
	h := &dirHandle{path: path, dir: dir, root: root}
	held, err1 := dir.Stat()
	tree, err2 := root.Stat(".")
	if err := errors.Join(err1, err2); err != nil {
		h.close()
		return nil, err
	}
	if !os.SameFile(fi, held) || !os.SameFile(held, tree) {
		h.close()
		return nil, fmt.Errorf("%s was replaced by another directory while it was being opened", path)
	}
	return h, nil
}

// read returns the files of the held directory, read through the handle.
func (h *dirHandle) read() (platformmodule.Files, error) {
	return readFS(h.root.FS())
}

// changed says how the path no longer names the held directory ("was
// removed", "is another directory: ..."), or returns "" while it does.
func (h *dirHandle) changed() string {
	held, err := h.dir.Stat()
	if err != nil {
		return fmt.Sprintf("cannot be examined through the handle held on it: %v", err)
	}
	now, err := os.Lstat(h.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "was removed"
	case err != nil:
		return fmt.Sprintf("can no longer be looked up: %v", err)
	case !os.SameFile(held, now):
		if linked(held) {
			return "is another directory: the one leased was moved away and another put at its path"
		}
		return "is another directory: the one leased was removed and another put at its path"
	case !linked(held):
		return "was removed"
	}
	return ""
}

func (h *dirHandle) close() {
	h.root.Close()
	h.dir.Close()
}
