package publish

import (
	"crypto/sha256"
	"io/fs"
	"sync"

	"leasekit.dev/dirlife"
)

// A linkIndex is the [dirlife.Linker] of a Publisher under LinkUnchanged.
// It records, by content and permission bits, the files of the
// directories the Publisher's layout published or verified in this
// process, so that its writes hard-link an unchanged file instead of
// writing it again. A directory enters the index when a write of it is
// published or Verify finds it intact, and leaves it when Prune or Reset
// (Boot's too) sets it aside, a rewrite replaces it, or Verify finds it
// otherwise.
// The source of a file is the newest one of its content and permission
// bits: after a link failed (EMLINK: an inode with too many links) and
// the file was written, the new inode is the one linked to.
//
// The zero linkIndex is empty and ready for use. It is safe for
// concurrent use by multiple goroutines.
type linkIndex struct {
	mu    sync.Mutex
	files map[linkKey][]linkRef     // the files of each content, oldest first
	dirs  map[string][]dirlife.File // the files of each directory, by its name under Root
}

// linkKey is what a linked file must share with its source.
type linkKey struct {
	sum  [sha256.Size]byte
	size int64
	perm fs.FileMode
}

func keyOf(f *dirlife.File) linkKey { return linkKey{f.Sum, f.Size, f.Perm} }

// linkRef is one indexed file: f, of directory dir.
type linkRef struct {
	dir string
	f   *dirlife.File // in dirs[dir]
}

// Source returns the newest indexed file with want's content and
// permission bits.
func (x *linkIndex) Source(want dirlife.File) (string, dirlife.File, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	refs := x.files[keyOf(&want)]
	if len(refs) == 0 {
		return "", dirlife.File{}, false
	}
	r := refs[len(refs)-1]
	return r.dir, *r.f, true
}

// Found records files as those of directory dir, in place of what x held
// of it.
func (x *linkIndex) Found(dir string, files []dirlife.File) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.goneLocked(dir)
	if x.files == nil {
		x.files, x.dirs = map[linkKey][]linkRef{}, map[string][]dirlife.File{}
	}
	for i := range files {
		k := keyOf(&files[i])
		x.files[k] = append(x.files[k], linkRef{dir, &files[i]})
	}
	x.dirs[dir] = files
}

// Gone forgets directory dir.
func (x *linkIndex) Gone(dir string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.goneLocked(dir)
}

func (x *linkIndex) goneLocked(dir string) {
	files, ok := x.dirs[dir]
	if !ok {
		return
	}
	delete(x.dirs, dir)
	for i := range files {
		k := keyOf(&files[i])
		refs := x.files[k]
		kept := refs[:0]
		for _, r := range refs {
			if r.dir != dir {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(x.files, k)
		} else {
			clear(refs[len(kept):])
			x.files[k] = kept
		}
	}
}

// linked returns how many files of directory dir (its name under Root)
// its write hard-linked from other directories instead of writing, and
// their bytes.
func (x *linkIndex) linked(dir string) (files int, bytes int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.dirs[dir] {
		if f.Linked {
			files++
			bytes += f.Size
		}
	}
	return files, bytes
}
