package dirlife

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
)

// The steps of a link, to the fault seam: a hard link of an unchanged file,
// the read that compares a source with the new file before it is
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

// A Linker chooses the sources a layout's writes hard-link unchanged
// files from ([Layout.Link]): the layout tells it the files of every
// directory a write published or [Layout.Verify] found intact, and asks it
// for a source of each file a write stages. The layout calls its methods
// holding Root's lock (shared, or for Gone Prune's and Reset's exclusive
// one), from several goroutines at once: they must be quick, safe for
// concurrent use, and call no method of a Layout on Root. A panic in
// one reaches the caller of the layout's method with the lock let go, and
// leaves what a failure of that method at that step leaves.
//
// The layout links only from a [File] it made, unchanged, of the
// directory Source names under this Root, holding want's Sum, Size and
// Perm; from any other (the zero File, one a Linker changed, one of
// another Root: a Linker serves one), it writes the file.
type Linker interface {
	// Source returns a file of an earlier directory, dir its name under
	// Root, with want's Sum, Size and Perm, or false. want is the staged
	// file: its Path under its directory, Sum, Size and Perm.
	Source(want File) (dir string, from File, ok bool)
	// Found reports that dir (its name under Root) holds files: a write
	// published it (on a rewrite, in place of what dir held before) or
	// Verify found it intact. Found may keep files: the layout does not
	// use the slice again.
	Found(dir string, files []File)
	// Gone reports that dir was set aside (by Prune or Reset) or failed
	// Verify: no write should link from it.
	Gone(dir string)
}

// A File is a regular file a layout found in a directory under Root, as a
// [Linker] is told of it. Anyone can make or change a File, but the
// layout links only from one it made, unchanged (see [Linker]).
//
// With each file the layout keeps its stamp: inode, size, modification
// time, change time and permission bits, as the write or Verify that
// found it took them. The change time is the one no call sets back: the
// system moves it to its clock on every write, truncation, chmod, utimes,
// link or unlink of the inode, however the modification time is kept (cp
// -p, rsync -t, a coarse clock). A write links a file without reading it
// only when all of these hold: its stamp is still the one found; the
// layout knew the file's bytes when it took that stamp (its own write
// wrote them, or Verify read them after it, from a descriptor with that
// very stamp), and did not link the file
// (its own link moved the change time, and a change in the same tick of
// the clock would keep it); and the filesystem's clock, read before the
// stamp was taken (the directory's times set again to what they are), was
// past the file's change time (racy git's rule: a change in the tick the
// stamp was taken in would leave the stamp as it was). Any other file
// (one whose stamp moved, one found in its change time's tick, one the
// layout linked, any file where the system tells no change time) is read
// and compared byte for byte with the new file before it is linked, and
// written instead if they differ. A change that lands between that check
// and the link reaches the new directory, as one a moment later would;
// the next write reads the file again.
type File struct {
	Path   string            // slash-separated, under its directory
	Sum    [sha256.Size]byte // the SHA-256 of its bytes
	Size   int64
	Perm   fs.FileMode
	Linked bool // its write hard-linked it from another directory instead of writing it

	// known: the walk knew the file's bytes (its write wrote them, or the
	// walk read them after it took at, from a descriptor stamped at), it
	// did not link it, and the filesystem's clock had passed at.Ctime
	// before at was taken. A change since then moves the change time.
	known bool
	at    sys.Stamp // as the walk found it
	seal  uint64    // see sealOf; zero until the layout tells a Linker of it
}

// sealSeed keys the seals of this process's Files.
var sealSeed = maphash.MakeSeed()

// sealOf returns the seal of f as a file of directory dir under the root
// whose key is root: a hash of all three, f's seal aside, keyed by a seed
// of the process, never zero. A File changed, made outside the layout or
// found elsewhere has another seal, but for a collision of 64-bit hashes.
func sealOf(root sys.Key, dir string, f File) uint64 {
	f.seal = 0
	type sealed struct {
		root sys.Key
		dir  string
		f    File
	}
	return maphash.Comparable(sealSeed, sealed{root, dir, f}) | 1
}

// found seals files, found in directory dir of the root whose key is
// root, and tells l.Link of them.
func (l Layout[ID]) found(root sys.Key, dir string, files []File) {
	for i := range files {
		files[i].seal = sealOf(root, dir, files[i])
	}
	l.Link.Found(dir, files)
}

// linking reports whether l links: it has a Link, and the system hard
// links (where it has none, a write under Link fails).
func (l Layout[ID]) linking() bool { return l.Link != nil && sys.HardLinks }

// dropLinked tells l.Link, if l links, that directory name of Root is
// gone.
func (l Layout[ID]) dropLinked(name string) {
	if l.linking() {
		l.Link.Gone(name)
	}
}

// A linker hard-links the unchanged files of one staging directory. It
// keeps the last source and staged directories it linked in open, each
// opened through Root, so that a link from a file whose bytes the layout
// knows costs fstatat(2), link(2) and fstatat(2), and one from any other
// source a read of it and a comparison beside.
type linker struct {
	ctx      context.Context
	x        Linker   // nil: link nothing
	root     *os.Root // Root
	key      sys.Key  // Root's
	stage    string   // the staging directory's name in Root
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

// link makes the file rel of the staging tree a hard link to the source
// k.x offers for a file with sum s and permission bits perm, and reports
// whether it did. With replace, rel exists (written already, its bytes
// those hashed to s) and is replaced atomically; without, rel is absent
// and data holds its bytes. A source is linked without reading only when
// its stamp is the one found and the layout knew its bytes then (see
// [File]); any other is read and compared with data, or with the written
// rel, first. On any failure (no source, one the layout did not make as
// it stands, a source whose bytes differ, EMLINK, EXDEV) rel is left as
// it was and link reports false: the caller writes it.
func (k *linker) link(rel string, s fileSum, perm fs.FileMode, data []byte, replace bool) bool {
	if k == nil || k.x == nil {
		return false
	}
	dir, ref, ok := k.x.Source(File{Path: rel, Sum: s.sum, Size: s.size, Perm: perm})
	// A walk that read more or fewer bytes than it stamped (a file that
	// grew or shrank while read) found a source of no one size: its
	// comparison would read only the size stamped.
	if !ok || ref.Sum != s.sum || ref.Size != s.size || ref.at.Size != s.size || ref.Perm != perm || ref.seal != sealOf(k.key, dir, ref) ||
		k.fault(stepLink, path.Join(k.stage, rel)) != nil {
		return false
	}
	src, err := k.at(&k.src, path.Join(dir, path.Dir(ref.Path)))
	if err != nil {
		return false
	}
	dst, err := k.at(&k.dst, path.Join(k.stage, path.Dir(rel)))
	if err != nil {
		return false
	}
	srcBase, base := path.Base(ref.Path), path.Base(rel)
	// at: the source as it stood when its bytes were last known to be
	// those of rel; its link must be that inode still.
	var at sys.Stamp
	if ref.known {
		if at, ok = sys.StatAt(src, srcBase); !ok || at.Ino != ref.at.Ino {
			return false // not the file found (a rename over it): not even read
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
// found stamped was, holding the bytes of data or, with replace, of the
// written file base in directory dst, and returns its stamp as it was
// before it was read. It reads the size that stamp tells: the stat after
// the link tells a file grown or shrunk since.
func (k *linker) sameBytes(src *os.File, srcBase string, found sys.Stamp, dst *os.File, base string, data []byte, replace bool) (sys.Stamp, bool) {
	f, err := sys.OpenAt(src, srcBase)
	if err != nil {
		return sys.Stamp{}, false
	}
	defer f.Close()
	at, ok := f.Stamp()
	if !ok || at.Ino != found.Ino || at.Size != found.Size || at.Perm != found.Perm || !replace && int64(len(data)) != at.Size {
		return sys.Stamp{}, false
	}
	buf := tree.Bufs.Get().(*[]byte)
	defer tree.Bufs.Put(buf)
	var staged sys.RawFile
	var other []byte
	if replace {
		if staged, err = sys.OpenAt(dst, base); err != nil {
			return sys.Stamp{}, false
		}
		defer staged.Close()
		o := tree.Bufs.Get().(*[]byte)
		defer tree.Bufs.Put(o)
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
