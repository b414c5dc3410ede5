package dirlife

import (
	"os"
	"strings"
	"sync/atomic"
)

// maxCursorDirs bounds the directories a [dirCursor] keeps open: the
// nearest ancestors of the directory it stands in. With the files in flight
// in a file pool, each of which may keep its own directory open, a Write
// holds at most maxCursorDirs + 2*syncWorkers + a few descriptors of its
// own (see maxWriteFDs), whatever the depth and width of its tree.
const maxCursorDirs = 16

// maxWriteFDs is the most descriptors one Write holds open at once: the
// cursor's directories, under syncFiles one directory and one file per
// worker and one more directory queued, a directory being synced or
// created in, the staging root, the root's own descriptors (the root, its
// lock, the directory used to sync it) and slack for the runtime's os.Root
// walks, which open and close one directory at a time.
const maxWriteFDs = maxCursorDirs + 2*syncWorkers + 1 + 8

// A dirHandle is one open directory of a staging tree. It is closed when
// its last reference is dropped: the cursor's, while it is on the cursor's
// path, and one per queued or running file job in it.
type dirHandle struct {
	name string   // relative to the staging root; "." for the root itself
	root *os.Root // nil for the staging root, which the cursor does not own
	top  *os.Root // the staging root
	refs atomic.Int32
}

// dir returns the directory as an os.Root.
func (h *dirHandle) dir() *os.Root {
	if h.root == nil {
		return h.top
	}
	return h.root
}

func (h *dirHandle) acquire() *dirHandle {
	h.refs.Add(1)
	return h
}

// release drops one reference and closes the directory with the last.
func (h *dirHandle) release() {
	if h.refs.Add(-1) == 0 && h.root != nil {
		h.root.Close()
	}
}

// A dirCursor walks the directories of a staging tree in the sorted order
// of a plan, opening each from its nearest open ancestor and keeping open
// only the last maxCursorDirs directories on the path to where it stands:
// the descriptors it holds do not grow with the depth or width of the tree.
// A jump back above its window reopens from the staging root, one level at
// a time; sorted order makes such jumps rare.
type dirCursor struct {
	top  *dirHandle   // the staging root, always open, owned by the caller
	path []*dirHandle // open ancestors of the current directory, shallow to deep
}

func newDirCursor(stage *os.Root) *dirCursor {
	top := &dirHandle{name: ".", top: stage}
	top.refs.Store(1) // never closed by the cursor
	return &dirCursor{top: top}
}

// within reports whether dir is d or inside it.
func within(dir, d string) bool {
	return d == "." || dir == d || strings.HasPrefix(dir, d+"/") // d is clean
}

// at returns dir, open, with a reference the caller must release. dir is a
// clean relative directory of the tree, "." for the staging root.
func (c *dirCursor) at(dir string) (*dirHandle, error) {
	for n := len(c.path); n > 0 && !within(dir, c.path[n-1].name); n = len(c.path) {
		c.path[n-1].release()
		c.path = c.path[:n-1]
	}
	base := c.top
	if n := len(c.path); n > 0 {
		base = c.path[n-1]
	}
	for base.name != dir {
		start := 0 // of the next element in dir
		if base.name != "." {
			start = len(base.name) + 1
		}
		elem, _, _ := strings.Cut(dir[start:], "/")
		r, err := base.dir().OpenRoot(elem)
		if err != nil {
			return nil, err
		}
		h := &dirHandle{name: dir[:start+len(elem)], root: r, top: c.top.top}
		h.refs.Store(1)
		if len(c.path) == maxCursorDirs {
			c.path[0].release()
			c.path = append(c.path[:0], c.path[1:]...)
		}
		c.path = append(c.path, h)
		base = h
	}
	return base.acquire(), nil
}

// close releases every directory the cursor holds; those still used by
// queued file jobs close when the jobs are done.
func (c *dirCursor) close() {
	for _, h := range c.path {
		h.release()
	}
	c.path = nil
}
