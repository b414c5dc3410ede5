package dirlife

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/tree"
)

// CopyFS is [Layout.WriteStream] with a fill that copies fsys's tree, a
// buffer at a time: its directories (empty ones too), regular files and
// symbolic links (fsys must implement [fs.ReadLinkFS] for those). Files
// keep their permission bits exactly, whatever the umask; directories keep
// theirs with the owner's read, write and search added (an [embed.FS]
// directory, 0o555, becomes 0o755). Each entry is checked before it is
// copied ([*NameError]), also one whose name is not one path element.
// CopyFS returns once ctx is done, also while a read from fsys blocks: the
// read is abandoned, and its goroutine ends when it returns. Under
// [Layout.Link] files lose their write bits, and unchanged ones are linked.
func (l Layout[ID]) CopyFS(ctx context.Context, id ID, fsys fs.FS, opts StreamOptions) (Written, error) {
	return l.stream(ctx, id, func(ctx context.Context, sr *os.Root, stage string, k *linker) (filled, error) {
		c := &copier{l: l.fault, ctx: ctx, fsys: fsys, cur: tree.NewCursor(sr), stage: stage, k: k, sums: map[string]fileSum{}, hash: sha256.New()}
		defer c.cur.Close()
		defer func() {
			if c.held != nil {
				b := c.held[:0] // not &c.held, which would keep c
				heldBufs.Put(&b)
			}
		}()
		err := c.walk()
		return filled{sums: c.sums, wrote: c.wrote, counted: true}, err
	}, opts)
}

// walk visits fsys's tree as [fs.WalkDir] does, root first, then each
// directory's entries in the order [fs.ReadDir] gives them, but refuses
// an entry whose name is not one path element before it visits it:
// joined to its directory's path, such a name names another entry (an
// empty one, or ".", the directory itself, which a walk would enter for
// ever).
func (c *copier) walk() error {
	info, err := fs.Stat(c.fsys, ".")
	if err != nil {
		return err
	}
	if err := c.visit(".", fs.FileInfoToDirEntry(info), nil); err != nil {
		return err
	}
	return c.walkDir(".")
}

func (c *copier) walkDir(dir string) error {
	entries, err := fs.ReadDir(c.fsys, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		base := e.Name()
		if base == "" || base == "." || base == ".." || strings.Contains(base, "/") {
			given := base // as listed, not joined: a join would name another entry
			if dir != "." {
				given = dir + "/" + base
			}
			return &NameError{Name: given, Rule: fmt.Sprintf("is an entry named %q in the fs.FS's directory %q: an entry's name must be one path element (not empty, \".\" or \"..\", and without a slash)", base, dir)}
		}
		name := tree.PathJoin(dir, base)
		if err := c.visit(name, e, nil); err != nil {
			return err
		}
		if e.IsDir() {
			if err := c.walkDir(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// A copier copies an fs.FS into a staging directory. It creates each
// entry in its directory, opened by a tree.Cursor: the walk's depth-first
// order keeps the cursor's moves short, and its descriptors bounded.
type copier struct {
	l     faultFunc
	ctx   context.Context
	fsys  fs.FS
	cur   *tree.Cursor
	stage string
	k     *linker
	sums  map[string]fileSum
	hash  hash.Hash
	held  []byte // under Link, a file of up to linkBufSize read before it is linked or written
	wrote int64  // bytes passed to write(2)
}

func (c *copier) visit(name string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if name == "." {
		if !d.IsDir() {
			return &NameError{Name: name, Rule: "is not a directory: a copy needs a tree"}
		}
		return nil
	}
	if _, err := names.CleanFile(name); err != nil {
		return err
	}
	full := path.Join(c.stage, name)
	h, err := c.cur.At(path.Dir(name))
	if err != nil {
		return err
	}
	defer h.Release()
	dir, base := h.Root(), path.Base(name)
	info, err := d.Info()
	if err != nil {
		return err
	}
	mode := info.Mode()
	if mode.IsDir() {
		mode |= 0o700
	}
	if err := names.CheckMode(name, mode); err != nil {
		return err
	}
	switch {
	case mode.IsDir():
		perm := mode.Perm()
		if err := c.l(stepMkdir, full); err != nil {
			return &os.PathError{Op: "mkdir", Path: full, Err: err}
		}
		if err := dir.Mkdir(base, perm); err != nil {
			return err
		}
		// Exactly, whatever the umask, keeping the setgid bit a setgid
		// Root passes on, as Write keeps it.
		fi, err := dir.Lstat(base)
		if err != nil {
			return err
		}
		if got := fi.Mode(); got.Perm() != perm {
			return dir.Chmod(base, perm|got&fs.ModeSetgid)
		}
		return nil
	case mode.Type() == fs.ModeSymlink:
		target, err := fs.ReadLink(c.fsys, name)
		if err != nil {
			return err
		}
		if err := names.CheckLinkTarget(name, name, target); err != nil {
			return err
		}
		if err := c.l(stepCreate, full); err != nil {
			return &os.PathError{Op: "symlink", Path: full, Err: err}
		}
		return dir.Symlink(target, base)
	}
	return c.file(dir, base, name, full, c.k.perm(mode.Perm()))
}

// file copies the regular file name, base in dir, hashing it as it is
// written. Under Link, a file of up to linkBufSize is held and hashed
// before it is linked or written, and a larger one, written as it is
// hashed, is then replaced by a link if it is unchanged.
func (c *copier) file(dir *os.Root, base, name, full string, perm fs.FileMode) error {
	fc := &fileCopy{c: c, dir: dir, base: base, full: full, perm: perm}
	defer fc.close()
	if c.k.x == nil {
		if err := fc.create(); err != nil { // before it is read, as without Link
			return err
		}
	} else if c.held == nil {
		c.held = (*heldBufs.Get().(*[]byte))[:0]
	}
	c.hash.Reset()
	n, err := tree.Copy(c.ctx, fc, c.fsys, name)
	if err != nil {
		return err
	}
	s := fileSum{size: n}
	c.hash.Sum(s.sum[:0])
	switch {
	case fc.f == nil && c.k.link(name, s, perm, c.held, false):
		s.linked = true
	case fc.f == nil:
		if err := fc.create(); err != nil {
			return err
		}
	}
	if fc.f != nil {
		if err := fc.f.Close(); err != nil {
			return err
		}
		fc.f = nil
		s.linked = c.k.link(name, s, perm, nil, true)
	}
	c.sums[name] = s
	return nil
}

// A fileCopy is the io.Writer a file is copied to: the staged file, which
// it creates once it must, holding what comes before in c.held.
type fileCopy struct {
	c    *copier
	dir  *os.Root
	base string
	full string
	perm fs.FileMode
	f    *os.File
}

func (fc *fileCopy) Write(b []byte) (int, error) {
	c := fc.c
	c.hash.Write(b)
	if fc.f == nil {
		if len(c.held)+len(b) <= cap(c.held) {
			c.held = append(c.held, b...)
			return len(b), nil
		}
		if err := fc.create(); err != nil {
			return 0, err
		}
	}
	n, err := fc.f.Write(b)
	c.wrote += int64(n)
	return n, err
}

// create creates the staged file with exactly perm, whatever the umask,
// and writes to it what c.held holds.
func (fc *fileCopy) create() error {
	c := fc.c
	if err := c.l(stepCreate, fc.full); err != nil {
		return &os.PathError{Op: "create", Path: fc.full, Err: err}
	}
	f, err := fc.dir.OpenFile(fc.base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fc.perm)
	if err != nil {
		return err
	}
	fc.f = f
	if err := f.Chmod(fc.perm); err != nil { // exactly, whatever the umask
		return err
	}
	if err := c.l(stepWrite, fc.full); err != nil {
		return &os.PathError{Op: "write", Path: fc.full, Err: err}
	}
	n, err := f.Write(c.held) // hashed already
	c.wrote += int64(n)
	c.held = c.held[:0]
	return err
}

func (fc *fileCopy) close() {
	if fc.f != nil {
		fc.f.Close()
	}
	fc.c.held = fc.c.held[:0]
}

// heldBufs holds the buffers in which copies under Link held small files.
var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, linkBufSize); return &b }}
