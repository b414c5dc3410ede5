package dirlife

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
)

// The steps of a link, to the fault seam: a hard link of an unchanged file,
// the read that compares an indexed file with the new one before it is
// linked, and a walk's reading of the filesystem's clock (failed: the
// clock is unknown, so the walk knows no file's bytes by its stamp).
const (
	stepLink    = "link"
	stepCompare = "compare"
	stepClock   = "clock"
)

// linkBufSize bounds the file a copy under [Layout.Link] hashes in memory
// before it decides to link or write it; a larger one is written as it is
// hashed and, if it is unchanged, replaced by a link.
const linkBufSize = 1 << 20

// A LinkIndex records, by content and permission bits, the files of the
// directories under one Root that a layout whose [Layout.Link] holds it
// published or verified in this process, so that its writes hard-link an
// unchanged file instead of writing it again. A directory enters the index
// when a write of it is published or [Layout.Verify] finds it intact, and
// leaves it when Prune or Reset set it aside, a rewrite replaces
// it, or Verify finds it otherwise.
//
// With each file the index keeps its stamp: inode, size, modification
// time, change time and permission bits, as the write or Verify that
// indexed it found them. The change time is the one no call sets back:
// the system moves it to its clock on every write, truncation, chmod,
// utimes, link or unlink of the inode, however the modification time is
// kept (cp -p, rsync -t, a coarse clock). A write links a file without
// reading it only when all of these hold: its stamp is still the one
// indexed; the index knew the file's bytes when it took that stamp (its
// own write wrote them, or Verify read them after it), and did not link
// the file (its own link moved the change time, and a change in the same
// tick of the clock would keep it); and the filesystem's clock, read
// before the stamp was taken (the directory's times set again to what
// they are), was past the file's change time (racy git's rule: a change in the tick
// the stamp was taken in would leave the stamp as it was). Any other
// file (one whose stamp moved, one indexed in its change time's tick, one
// this index linked, any file where the system tells no change time) is
// read and compared byte for byte with the new file before it is linked,
// and written instead if they differ. A change that lands between that
// check and the link reaches the new directory, as one a moment later
// would; the next write reads the file again.
//
// The zero LinkIndex is empty and ready for use; it must not be copied
// after first use. It is safe for concurrent use by multiple goroutines.
type LinkIndex struct {
	mu    sync.Mutex
	root  string                 // the Root it serves, once used
	files map[linkKey][]linkRef  // the files of each content, oldest first
	dirs  map[string][]linkEntry // the files of each directory, by its name under Root
}

// linkKey is what a linked file must share with its source.
type linkKey struct {
	sum  [sha256.Size]byte
	size int64
	perm fs.FileMode
}

// linkRef is one indexed file: rel in directory dir, as it stood when it
// was indexed.
type linkRef struct {
	dir, rel string
	at       sys.Stamp
	known    bool // its bytes are known while its stamp stays at (see linkEntry)
}

// A linkEntry is a file a walk found, for the index.
type linkEntry struct {
	key    linkKey
	rel    string
	at     sys.Stamp
	linked bool // its write linked it from another directory instead of writing it
	// known: the walk knew the file's bytes (its write wrote them, or the
	// walk read them after it took at), it did not link it, and the
	// filesystem's clock had passed at.Ctime before at was taken. A change
	// since then moves the change time.
	known bool
}

// bind reports whether x serves root or, without claim, none yet; with
// claim, x serves root from then on if it served none.
func (x *LinkIndex) bind(root string, claim bool) bool {
	root = filepath.Clean(root)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.root == "" && claim {
		x.root = root
	}
	return x.root == root || x.root == ""
}

// find returns the newest indexed file with key k: after a link failed
// (EMLINK: an inode with too many links) and the file was written, the
// new inode is the one linked to.
func (x *LinkIndex) find(k linkKey) (linkRef, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	refs := x.files[k]
	if len(refs) == 0 {
		return linkRef{}, false
	}
	return refs[len(refs)-1], true
}

// set records entries as the files of directory dir, in place of what x
// held of it.
func (x *LinkIndex) set(dir string, entries []linkEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(dir)
	if x.files == nil {
		x.files, x.dirs = map[linkKey][]linkRef{}, map[string][]linkEntry{}
	}
	for _, e := range entries {
		x.files[e.key] = append(x.files[e.key], linkRef{dir, e.rel, e.at, e.known})
	}
	x.dirs[dir] = entries
}

// drop forgets directory dir.
func (x *LinkIndex) drop(dir string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked(dir)
}

func (x *LinkIndex) dropLocked(dir string) {
	entries, ok := x.dirs[dir]
	if !ok {
		return
	}
	delete(x.dirs, dir)
	for _, e := range entries {
		refs := x.files[e.key]
		kept := refs[:0]
		for _, r := range refs {
			if r.dir != dir {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(x.files, e.key)
		} else {
			clear(refs[len(kept):])
			x.files[e.key] = kept
		}
	}
}

// Linked returns how many files of directory dir (its name under Root)
// its write hard-linked from other directories instead of writing, and
// their bytes; ok is false when x holds no directory dir.
func (x *LinkIndex) Linked(dir string) (files int, bytes int64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	entries, ok := x.dirs[dir]
	for _, e := range entries {
		if e.linked {
			files++
			bytes += e.key.size
		}
	}
	return files, bytes, ok
}

// linkIndex returns l.Link checked to serve Root, or nil under no Link.
// One that serves no root yet is made to serve Root with claim, which a
// call makes once it has opened Root: a call that fails on its Root binds
// the index to nothing.
func (l Layout[ID]) linkIndex(claim bool) (*LinkIndex, error) {
	if l.Link == nil {
		return nil, nil
	}
	if !sys.HardLinks {
		return nil, sys.ErrNoLinks
	}
	if !l.Link.bind(l.Root, claim) {
		return nil, fmt.Errorf("dirlife: the layout's LinkIndex serves the root %s, not %s: a LinkIndex serves one Root", l.Link.root, l.Root)
	}
	return l.Link, nil
}

// dropLinked forgets directory name of Root in l.Link, if l has one that
// serves Root.
func (l Layout[ID]) dropLinked(name string) {
	if x, err := l.linkIndex(false); x != nil && err == nil {
		x.drop(name)
	}
}

// A linker hard-links the unchanged files of one staging directory. It
// keeps the last source and staged directories it linked in open, each
// opened through Root, so that a link from a file whose bytes the index
// knows costs fstatat(2), link(2) and fstatat(2), and one from any other
// indexed file a read of it and a comparison beside.
type linker struct {
	ctx      context.Context
	x        *LinkIndex // nil: link nothing
	root     *os.Root   // Root
	stage    string     // the staging directory's name in Root
	fault    faultFunc
	readOnly bool        // under Link: files are made without write bits
	filePerm fs.FileMode // a Write's files are created with; under Link, also their mode on disk

	src, dst openDir
}

// openDir is a directory of Root, open, by its name in Root.
type openDir struct {
	name string
	f    *os.File
}

// at returns the directory name of Root, open.
func (k *linker) at(d *openDir, name string) (*os.File, error) {
	if d.f != nil && d.name == name {
		return d.f, nil
	}
	d.close()
	f, err := k.root.Open(name)
	if err != nil {
		return nil, err
	}
	d.name, d.f = name, f
	return f, nil
}

func (d *openDir) close() {
	if d.f != nil {
		d.f.Close()
		d.f = nil
	}
}

// close closes the directories k holds open.
func (k *linker) close() {
	k.src.close()
	k.dst.close()
}

// perm returns the permission bits a copied file with perm is published
// with.
func (k *linker) perm(perm fs.FileMode) fs.FileMode {
	if k.readOnly {
		return readOnlyPerm(perm)
	}
	return perm
}

// link makes the file rel of the staging tree a hard link to an indexed
// file with sum s and permission bits perm, and reports whether it did.
// With replace, rel exists (written already, its bytes those hashed to s)
// and is replaced atomically; without, rel is absent and data holds its
// bytes. A source is linked without reading only when its stamp is the
// one indexed and the index knew its bytes then (see [LinkIndex]); any
// other is read and compared with data, or with the written rel, first.
// On any failure (none indexed, a source whose bytes differ, EMLINK,
// EXDEV) rel is left as it was and link reports false: the caller writes
// it.
func (k *linker) link(rel string, s fileSum, perm fs.FileMode, data []byte, replace bool) bool {
	if k == nil || k.x == nil {
		return false
	}
	ref, ok := k.x.find(linkKey{s.sum, s.size, perm})
	if !ok || k.fault(stepLink, path.Join(k.stage, rel)) != nil {
		return false
	}
	src, err := k.at(&k.src, path.Join(ref.dir, path.Dir(ref.rel)))
	if err != nil {
		return false
	}
	dst, err := k.at(&k.dst, path.Join(k.stage, path.Dir(rel)))
	if err != nil {
		return false
	}
	srcBase, base := path.Base(ref.rel), path.Base(rel)
	// at: the source as it stood when its bytes were last known to be
	// those of rel; its link must be that inode still.
	var at sys.Stamp
	if ref.known {
		if at, ok = sys.StatAt(src, srcBase); !ok || at.Ino != ref.at.Ino {
			return false // not the file indexed (a rename over it): not even read
		}
	}
	if !ref.known || at != ref.at {
		if k.fault(stepCompare, path.Join(k.stage, rel)) != nil {
			return false
		}
		if at, ok = k.sameBytes(src, srcBase, ref.at, dst, base, data, replace); !ok {
			return false
		}
	}
	tmp := base
	if replace {
		tmp = names.TempName(linkPrefix)
	}
	if sys.LinkAt(src, srcBase, dst, tmp) != nil {
		return false
	}
	if got, ok := sys.StatAt(dst, tmp); !ok || !got.SameInode(at) || (replace && sys.RenameAt(dst, tmp, base) != nil) {
		sys.UnlinkAt(dst, tmp) // not the file compared: the caller writes it
		return false
	}
	return true
}

// sameBytes reports whether srcBase in directory src is the inode
// indexed stamped was, holding the bytes of data or, with replace, of the
// written file base in directory dst, and returns its stamp as it was
// before it was read. It reads the size that stamp tells: the stat after
// the link tells a file grown or shrunk since.
func (k *linker) sameBytes(src *os.File, srcBase string, indexed sys.Stamp, dst *os.File, base string, data []byte, replace bool) (sys.Stamp, bool) {
	f, err := sys.OpenAt(src, srcBase)
	if err != nil {
		return sys.Stamp{}, false
	}
	defer f.Close()
	at, ok := f.Stamp()
	if !ok || at.Ino != indexed.Ino || at.Size != indexed.Size || at.Perm != indexed.Perm || !replace && int64(len(data)) != at.Size {
		return sys.Stamp{}, false
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	var staged sys.RawFile
	var other []byte
	if replace {
		if staged, err = sys.OpenAt(dst, base); err != nil {
			return sys.Stamp{}, false
		}
		defer staged.Close()
		o := copyBufs.Get().(*[]byte)
		defer copyBufs.Put(o)
		other = *o
	}
	for off := int64(0); off < at.Size; {
		if k.ctx.Err() != nil {
			return sys.Stamp{}, false
		}
		b := (*buf)[:min(int64(len(*buf)), at.Size-off)]
		if _, err := io.ReadFull(f, b); err != nil {
			return sys.Stamp{}, false
		}
		var want []byte
		if replace {
			want = other[:len(b)]
			if _, err := io.ReadFull(staged, want); err != nil {
				return sys.Stamp{}, false
			}
		} else {
			want = data[off : off+int64(len(b))]
		}
		if !bytes.Equal(b, want) {
			return sys.Stamp{}, false
		}
		off += int64(len(b))
	}
	return at, true
}
