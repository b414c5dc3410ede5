package removal

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"leasekit.dev/dirlife/internal/sys"
)

// A removal holds a handle of each directory it descends into, so that
// each entry is reached in one step, down to removeHandles levels; below,
// it reaches entries by paths relative to its deepest handle and opens a
// further handle only every removeLevels levels. So the descriptors a
// removal holds are bounded by removeHandles plus its depth divided by
// removeLevels (at most 32 more for any tree a Write makes, whose paths
// hold at most 4,095 bytes), plus one directory being listed, for each
// goroutine that removes the top of the tree's entries; and no operation
// resolves a path of more than removeLevels elements. Every removal of the
// process, its trees' tops included, runs on the process's MaxRemovers
// goroutines, so the process holds that bound MaxRemovers times at most,
// however many trees and calls remove at once.
const (
	removeHandles = 16
	removeLevels  = 64
)

// removeTree removes the entry name of parent and, if it is a directory,
// everything under it, through os.Root (a symbolic link is removed, never
// followed). It never descends into a directory on another device than
// dev, Root's: a filesystem mounted under Root is refused with a
// *MountError naming it (rel, its root-relative path), and it and its
// ancestors stay. Where the system tells the root of a mount (Linux), a
// mount of Root's own filesystem (a bind mount) is refused alike. An entry
// already gone is no error: another remover may have been first. The
// descriptors it holds are bounded, whatever the depth of the tree (see
// removeHandles). The caller is one of the process's removal goroutines;
// the removal of the top of the tree's entries takes more of them, those
// free, for helpers (see removeEach).
func removeTree(parent *os.Root, name, rel string, dev uint64, devOf func(fs.FileInfo) uint64) error {
	rm := treeRemoval{dev: dev, devOf: devOf}
	return rm.remove(parent, name, rel, 0)
}

// A treeRemoval is one removeTree.
type treeRemoval struct {
	dev   uint64
	devOf func(fs.FileInfo) uint64
}

// remove removes the entry at p, a path relative to base of at most
// removeLevels elements; held handles are open above base, base included.
func (rm treeRemoval) remove(base *os.Root, p, rel string, held int) error {
	fi, err := base.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if rm.devOf(fi) != rm.dev {
		return &MountError{Path: rel}
	}
	if !fi.IsDir() {
		return ignoreNotExist(base.Remove(p))
	}
	// The entries of p: through a handle of its own, or by paths from
	// base.
	sub, prefix := base, p+"/"
	if held < removeHandles || strings.Count(p, "/")+1 >= removeLevels {
		if sub, err = base.OpenRoot(p); err != nil {
			return ignoreNotExist(err) // gone already: removed by another
		}
		defer sub.Close()
		prefix = ""
		held++
	}
	entries, err := rm.list(sub, strings.TrimSuffix(prefix, "/"), rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var first error
	if held == 1 && len(entries) > 1 {
		// The top of the tree: its entries on up to RemoveWorkers
		// goroutines, so that the waits of their removals (for the
		// disk, for the journal) overlap.
		first = rm.removeEach(sub, entries, rel)
		entries = nil
	}
	for _, e := range entries {
		// Not a directory, as listed: unlinked in one step (a file
		// cannot hold a mount to descend into; one that is a mount point
		// is refused by the system). Should it have become a directory
		// since, it is looked at as one.
		if err := rm.removeEntry(sub, prefix, e, rel, held); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	return ignoreNotExist(base.Remove(p))
}

// list opens the directory p of r ("" for r itself), refuses it with a
// *MountError naming rel if it is on another device than Root or the root
// of a mount, and lists its entries, sorted by name, with their types as
// the directory tells them. The checks are of the
// directory opened, not only of the one looked at: it may have been
// swapped in between.
func (rm treeRemoval) list(r *os.Root, p, rel string) ([]fs.DirEntry, error) {
	if p == "" {
		p = "."
	}
	d, err := r.Open(p)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if rm.devOf(fi) != rm.dev {
		return nil, &MountError{Path: rel}
	}
	// A bind mount of Root's own filesystem has Root's device: the
	// system tells its root apart where it can.
	if mounted, err := sys.IsMountRoot(d); err != nil || mounted {
		if err != nil {
			return nil, err
		}
		return nil, &MountError{Path: rel}
	}
	entries, err := d.ReadDir(-1) // sorted by name
	return entries, err
}

// RemoveWorkers bounds the goroutines that remove the entries of the top
// of one tree.
const RemoveWorkers = 4

// removeEach removes the entries of sub, the top of a tree, on the
// calling goroutine and on up to RemoveWorkers-1 helpers, as many as the
// process's pool has free (see takeHelper), and returns the first
// failure. A helper done with its share goes on with the removals that
// wait for a goroutine, as a worker of the pool.
func (rm treeRemoval) removeEach(sub *os.Root, entries []fs.DirEntry, rel string) error {
	var mu sync.Mutex
	var first error
	next := 0
	work := func() {
		for {
			mu.Lock()
			if next == len(entries) {
				mu.Unlock()
				return
			}
			e := entries[next]
			next++
			mu.Unlock()
			err := rm.removeEntry(sub, "", e, rel, 1)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}
	}
	var wg sync.WaitGroup
	for range min(len(entries), RemoveWorkers) - 1 {
		if !takeHelper() {
			break // the process's other removals hold the rest
		}
		wg.Add(1)
		go removeHelper(work, &wg)
	}
	work()
	wg.Wait()
	return first
}

// removeHelper does work, a share of the top of a tree, on a slot of the
// pool that takeHelper took; then, no longer waited for, it removes what
// waits for a goroutine, and gives the slot back.
func removeHelper(work func(), wg *sync.WaitGroup) {
	work()
	wg.Done()
	if j, ok := nextRemoval(); ok {
		removeLoop(j)
	}
}

// removeEntry removes the entry e of the directory prefix of sub.
func (rm treeRemoval) removeEntry(sub *os.Root, prefix string, e fs.DirEntry, rel string, held int) error {
	n := e.Name()
	if t := e.Type(); t&fs.ModeType != 0 && !t.IsDir() || t.IsRegular() {
		err := sub.Remove(prefix + n)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	return rm.remove(sub, prefix+n, path.Join(rel, n), held)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
