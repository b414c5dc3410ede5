// Package tree holds what every walk of a staged or published tree shares:
// the order of its paths, the format of its digest, the hashing of files
// held in memory, a cursor that opens its directories with a bounded
// number of descriptors, the copy of a file of an fs.FS that a context
// can stop, and the reading of a directory's names. It knows nothing of
// layouts, locks or roots.
package tree

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxCursorDirs bounds the directories a [Cursor] keeps open: the
// nearest ancestors of the directory it stands in, whatever the depth and
// width of its tree.
const MaxCursorDirs = 16

// A Dir is one open directory of a staging tree. It is closed when
// its last reference is dropped: the cursor's, while it is on the cursor's
// path, and one per queued or running file job in it.
type Dir struct {
	name string   // relative to the staging root; "." for the root itself
	root *os.Root // nil for the staging root, which the cursor does not own
	top  *os.Root // the staging root
	refs atomic.Int32
}

// Root returns the directory as an os.Root.
func (h *Dir) Root() *os.Root {
	if h.root == nil {
		return h.top
	}
	return h.root
}

func (h *Dir) Acquire() *Dir {
	h.refs.Add(1)
	return h
}

// Release drops one reference and closes the directory with the last.
func (h *Dir) Release() {
	if h.refs.Add(-1) == 0 && h.root != nil {
		h.root.Close()
	}
}

// A Cursor walks the directories of a staging tree in the sorted order
// of a plan, opening each from its nearest open ancestor and keeping open
// only the last MaxCursorDirs directories on the path to where it stands:
// the descriptors it holds do not grow with the depth or width of the tree.
// A jump back above its window reopens from the staging root, one level at
// a time; sorted order makes such jumps rare.
type Cursor struct {
	top  *Dir   // the staging root, always open, owned by the caller
	path []*Dir // open ancestors of the current directory, shallow to deep
}

func NewCursor(stage *os.Root) *Cursor {
	top := &Dir{name: ".", top: stage}
	top.refs.Store(1) // never closed by the cursor
	return &Cursor{top: top}
}

// within reports whether dir is d or inside it.
func within(dir, d string) bool {
	return d == "." || dir == d || strings.HasPrefix(dir, d+"/") // d is clean
}

// at returns dir, open, with a reference the caller must release. dir is a
// clean relative directory of the tree, "." for the staging root.
func (c *Cursor) At(dir string) (*Dir, error) {
	for n := len(c.path); n > 0 && !within(dir, c.path[n-1].name); n = len(c.path) {
		c.path[n-1].Release()
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
		r, err := base.Root().OpenRoot(elem)
		if err != nil {
			return nil, err
		}
		h := &Dir{name: dir[:start+len(elem)], root: r, top: c.top.top}
		h.refs.Store(1)
		if len(c.path) == MaxCursorDirs {
			c.path[0].Release()
			c.path = append(c.path[:0], c.path[1:]...)
		}
		c.path = append(c.path, h)
		base = h
	}
	return base.Acquire(), nil
}

// close releases every directory the cursor holds; those still used by
// queued file jobs close when the jobs are done.
func (c *Cursor) Close() {
	for _, h := range c.path {
		h.Release()
	}
	c.path = nil
}

// parallelHashBytes is the size from which SumAll hashes on more than
// one goroutine.
const parallelHashBytes = 1 << 20

// SumAll returns the SHA-256 of each of data, hashing up to hashers of
// them at once when they hold parallelHashBytes or more.
func SumAll(data [][]byte, hashers int) [][sha256.Size]byte {
	sums := make([][sha256.Size]byte, len(data))
	total := 0
	for _, d := range data {
		total += len(d)
	}
	n := min(hashers, len(data))
	if n < 2 || total < parallelHashBytes {
		for i, d := range data {
			sums[i] = sha256.Sum256(d)
		}
		return sums
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(data); i = int(next.Add(1) - 1) {
				sums[i] = sha256.Sum256(data[i])
			}
		})
	}
	wg.Wait()
	return sums
}

// ComparePaths orders clean slash-separated paths as a depth-first walk
// visits them, each directory's entries in byte order: element by element,
// a directory before what it holds.
func ComparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			ca = 0 // ends an element: before any byte of a longer one
		}
		if cb == '/' {
			cb = 0
		}
		return cmp.Compare(ca, cb)
	}
	return cmp.Compare(len(a), len(b))
}

// digestVersion starts every digest, so that a change of format changes
// every digest.
const digestVersion = "leasekit.dev/dirlife tree v1\n"

// A Digester computes a Digest from entries given in the order of
// ComparePaths.
type Digester struct {
	h       hash.Hash
	scratch []byte
	last    string // the last path, to check the order
	n       int
}

func (d *Digester) Init() {
	d.h = sha256.New()
	d.h.Write([]byte(digestVersion))
}

func (d *Digester) entry(kind byte, name string, perm fs.FileMode) {
	if d.n > 0 && ComparePaths(d.last, name) >= 0 {
		panic("dirlife: digest entries out of order: " + d.last + " before " + name)
	}
	d.last, d.n = name, d.n+1
	b := append(d.scratch[:0], kind)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(perm.Perm()))
	d.scratch = b
	d.h.Write(b)
}

func (d *Digester) Dir(name string, perm fs.FileMode) { d.entry('d', name, perm) }

func (d *Digester) File(name string, perm fs.FileMode, size int64, sum [sha256.Size]byte) {
	d.entry('f', name, perm)
	b := binary.AppendUvarint(d.scratch[:0], uint64(size))
	b = append(b, sum[:]...)
	d.scratch = b
	d.h.Write(b)
}

func (d *Digester) Link(name, target string) {
	d.entry('l', name, 0)
	b := binary.AppendUvarint(d.scratch[:0], uint64(len(target)))
	b = append(b, target...)
	d.scratch = b
	d.h.Write(b)
}

func (d *Digester) Sum() [sha256.Size]byte {
	var out [sha256.Size]byte
	d.h.Sum(out[:0])
	return out
}

// PathJoin joins a directory of a walk ("." for the top) and a name.
func PathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}

// BufSize is the buffer a streamed write reads a staged file back
// with, and each of the two a copy moves a file's bytes through.
const BufSize = 128 << 10

// Bufs holds the buffers of finished copies.
var Bufs = sync.Pool{New: func() any { b := make([]byte, BufSize); return &b }}

// A Panic carries the value of a panic in a fill, or in the reading of a
// file Copy copies, out of the staging path, which removes the staging
// directory before it is raised again.
type Panic struct{ Value any }

func (p *Panic) Error() string { return fmt.Sprintf("dirlife: fill panicked: %v", p.Value) }

// A chunk is one read of a copy.
type chunk struct {
	buf *[]byte
	n   int
	err error
}

// Copy copies the file name of fsys to w and returns the bytes copied.
// The file is opened and read on a goroutine of its own, through two
// buffers, so that ctx ends the copy also while a read blocks; that
// goroutine then ends at its next read's return.
func Copy(ctx context.Context, w io.Writer, fsys fs.FS, name string) (int64, error) {
	chunks := make(chan chunk)
	free := make(chan *[]byte, 2)
	free <- Bufs.Get().(*[]byte)
	free <- Bufs.Get().(*[]byte)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		send := func(c chunk) bool {
			select {
			case chunks <- c:
				return true
			case <-stop:
				return false
			}
		}
		defer func() {
			if v := recover(); v != nil {
				send(chunk{err: &Panic{v}})
			}
		}()
		f, err := fsys.Open(name)
		if err != nil {
			send(chunk{err: err})
			return
		}
		defer f.Close()
		for {
			var buf *[]byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			n, err := f.Read(*buf)
			if !send(chunk{buf, n, err}) || err != nil {
				return
			}
		}
	}()
	var total int64
	for {
		var c chunk
		select {
		case <-ctx.Done():
			return total, ctx.Err() // the buffers stay with the reader
		case c = <-chunks:
		}
		if c.n > 0 {
			if _, err := w.Write((*c.buf)[:c.n]); err != nil {
				return total, err
			}
			total += int64(c.n)
		}
		switch {
		case errors.Is(c.err, io.EOF):
			// The reader has returned: both buffers are free.
			Bufs.Put(c.buf)
			Bufs.Put(<-free)
			return total, nil
		case c.buf == nil:
			return total, c.err // the open failed, or the reader panicked
		case c.err != nil:
			return total, c.err
		}
		free <- c.buf
	}
}

// ReadNames returns the names in directory d, unsorted.
func ReadNames(d *os.Root) ([]string, error) {
	f, err := d.Open(".")
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return names, err
}

// MakeRemovable gives the owner read, write and search permission on
// every directory of the staging tree sr under dir that lacks it, so that
// the removal of a tree that a fill left unchecked or that was refused
// does not fail on a directory it made read-only. It works by path
// through sr, a descriptor at a time, and ignores errors: the removal
// reports what it cannot remove, and Prune or Reset retries.
func MakeRemovable(sr *os.Root, dir string) {
	fi, err := sr.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return
	}
	if perm := fi.Mode().Perm(); perm&0o700 != 0o700 {
		sr.Chmod(dir, perm|0o700)
	}
	d, err := sr.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		MakeRemovable(sr, path.Join(dir, name))
	}
}
