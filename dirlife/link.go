package dirlife

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
)

// stepLink names a hard link of an unchanged file to the fault seam.
const stepLink = "link"

// linkBufSize bounds the file a copy under [Layout.Link] hashes in memory
// before it decides to link or write it; a larger one is written as it is
// hashed and, if it is unchanged, replaced by a link.
const linkBufSize = 1 << 20

// A LinkIndex records, by content and permission bits, the files of the
// directories under one Root that a layout whose [Layout.Link] holds it
// published or verified in this process, so that its writes hard-link an
// unchanged file instead of writing it again. A directory enters the index
// when a write of it is published or [Layout.Verify] finds it intact, and
// leaves it when Prune, Reset or Adopt set it aside, a rewrite replaces
// it, or Verify finds it otherwise. The zero LinkIndex is empty and ready
// for use; it must not be copied after first use. It is safe for
// concurrent use by multiple goroutines.
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
	at       fileStamp
}

// A fileStamp tells a file from one put in its place since, and from
// itself changed in place since (by accident: a published file is
// read-only): its inode and its modification time.
type fileStamp struct {
	ino   uint64
	mtime int64 // in nanoseconds since the Unix epoch
}

// A linkEntry is a file a walk found, for the index.
type linkEntry struct {
	key    linkKey
	rel    string
	at     fileStamp
	linked bool // its write linked it from another directory instead of writing it
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
		x.files[e.key] = append(x.files[e.key], linkRef{dir, e.rel, e.at})
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
	if !hardLinks {
		return nil, errNoLinks
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
// opened through Root, so that a link costs link(2) and one fstatat(2).
type linker struct {
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
// With replace, rel exists (written already) and is replaced atomically;
// without, rel is absent. On any failure (none indexed, EMLINK, EXDEV, a
// source changed since it was indexed) rel is left as it was and link
// reports false: the caller writes it.
func (k *linker) link(rel string, s fileSum, perm fs.FileMode, replace bool) bool {
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
	base := path.Base(rel)
	tmp := base
	if replace {
		tmp = tempName(linkPrefix)
	}
	if linkAt(src, path.Base(ref.rel), dst, tmp) != nil {
		return false
	}
	if !isFile(dst, tmp, ref.at, s.size, perm) || (replace && renameAt(dst, tmp, base) != nil) {
		unlinkAt(dst, tmp) // not the file indexed: the caller writes it
		return false
	}
	return true
}
