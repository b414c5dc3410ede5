package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Prune removes every entry under Root except the directories of the IDs in
// keep: superseded IDs, staging leftovers of failed or killed Writes,
// moved-aside copies and anything else. A missing Root is not an error; an
// ID in keep without a directory is ignored, unless a rewrite without an
// atomic exchange left its last published directory moved aside (a crash
// between its two renames, or a failure to move it back; see the package
// limits): Prune then restores that directory into place, and removes the
// other copies.
//
// Under Root's exclusive lock, Prune renames each pruned ID's directory out
// of its path (so a reader finds it complete or absent, never half
// removed) and, unless NoSync, syncs Root once: when Prune returns, no
// pruned ID is listed, and none reappears after power loss. The renamed
// trees and other garbage are then removed in the background, off the
// caller's path and outside the lock, by one goroutine per Root and
// process; [Layout.Settle] waits for them. A removal that fails is
// reported by the next Prune or Settle, and what it left is removed by the
// next Prune. Prune waits for the background removal when it falls
// behind, so garbage never piles up.
//
// Prune refuses, removing nothing, a Root that is empty, the filesystem
// root, a symbolic link, or a non-empty directory the layout never claimed
// ([ErrUnsafeRoot], [ErrNotOwned]). Its exclusive lock waits for running
// Writes, so it never removes a staging directory that a live Write is
// filling. It never removes across a filesystem mounted under Root
// ([ErrMountPoint]). On an error it goes on with the other entries and
// returns the errors.
func (l Layout[ID]) Prune(keep ...ID) error {
	if l.Codec == nil {
		return ErrNoCodec // it could not tell the kept directories
	}
	h, err := l.openRoot("prune", false, exclusive)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	keepNames := make(map[string]bool, len(keep))
	for _, id := range keep {
		if name, err := l.name(id); err == nil {
			keepNames[name] = true
		}
	}
	st := h.lock.st
	st.retain()
	defer putState(st)
	garbage, err := l.setAside(h, "prune", keepNames, true)
	h.unlock()
	if qerr := l.enqueue(st, h, garbage); qerr != nil {
		err = errors.Join(err, qerr)
	}
	return errors.Join(err, st.rm.takeErr(h.r))
}

// Reset empties Root and makes sure it exists afterwards: the boot path,
// for state that is rebuilt from its source of truth at start. Reset needs
// no Codec. It refuses the same roots as Prune and holds the same exclusive
// lock, and it is synchronous: it waits for this process's background
// removals, and when it returns Root holds nothing (but for the marker
// file where Root's filesystem holds no extended attribute, and the lock
// file on Windows).
func (l Layout[ID]) Reset() error {
	h, err := l.openRoot("reset", true, exclusive)
	if err != nil {
		return err
	}
	defer h.release()
	st := h.lock.st
	st.rm.wait() // no removal of ours runs beside the ones below
	// A Write that published just before the lock was taken may queue
	// its old copy since the wait: Reset removes that too, beside the
	// remover, so that nothing is left when it returns.
	garbage, err := l.setAside(h, "reset", nil, false)
	dev, derr := rootDevice(h, l.devOf())
	if derr != nil {
		return errors.Join(err, fmt.Errorf("dirlife: reset: %w", derr))
	}
	for _, name := range garbage {
		if rerr := removeTree(h.r, name, name, dev, l.devOf()); rerr != nil {
			err = errors.Join(err, removeErr(l.Root, name, rerr))
		}
	}
	if err == nil {
		st.rm.takeErr(nil) // whatever failed before is gone now
	}
	return err
}

// setAside lists Root, under its exclusive lock, restores the moved-aside
// copy of each ID in keep whose path is empty (see strandedCopies), and
// returns the garbage: every entry but the layout's own and the kept IDs'
// directories. Each directory that is not a layout's staging or plain
// moved-aside entry (an ID's, anything named like one, or a moved-aside
// copy that records its ID) is first renamed aside, out of its path, under
// a name no later Prune restores; then, unless NoSync, Root is synced once,
// so that no renamed directory reappears after power loss and no restored
// one goes missing. With leaveBusy, entries the background remover has
// queued or is removing are left to it.
func (l Layout[ID]) setAside(h *openRoot, op string, keep map[string]bool, leaveBusy bool) ([]string, error) {
	d, err := h.r.Open(".")
	if err != nil {
		return nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	restore := strandedCopies(entries, keep)
	var errs error
	var garbage []string
	renamed := false
	for _, e := range entries {
		name := e.Name()
		if h.ownEntry(name) || leaveBusy && h.lock.st.rm.isBusy(name) {
			continue
		}
		if keep[name] {
			if _, isID := l.parse(e); isID {
				continue
			}
		}
		if _, ok := restore.from[name]; ok {
			continue // restored below
		}
		if restore.to[name] && !e.IsDir() {
			// A file or symbolic link in the path of a kept ID about to be
			// restored: garbage, removed now to make way.
			if err := h.r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = errors.Join(errs, removeErr(l.Root, name, err))
			}
			continue
		}
		if e.IsDir() && (!strings.HasPrefix(name, reservedLead) || isHeld(name)) {
			// Out of its path first, atomically, so that a reader never
			// finds it half removed and no later Prune restores it; but
			// never a mount point.
			fi, err := h.r.Lstat(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err == nil && l.devOf()(fi) != dev {
				err = &MountError{Root: l.Root, Path: name}
			}
			if err == nil {
				aside := tempName(asidePrefix)
				if err = h.r.Rename(name, aside); err == nil {
					name, renamed = aside, true
				}
			}
			if err != nil {
				errs = errors.Join(errs, removeErr(l.Root, name, err))
				continue
			}
		}
		garbage = append(garbage, name)
	}
	for from, to := range restore.from {
		// The last published copy of a kept ID whose path is empty: back
		// into place.
		if err := h.r.Rename(from, to); err != nil {
			errs = errors.Join(errs, fmt.Errorf("dirlife: %s: restore %s from %s: %w", op, filepath.Join(l.Root, to), from, err))
		} else {
			renamed = true
		}
	}
	if renamed && !l.NoSync {
		if err := syncDirFile(h.dir); err != nil {
			errs = errors.Join(errs, fmt.Errorf("dirlife: %s: sync %s: %w", op, l.Root, err))
		}
	}
	return garbage, errs
}

// devOf returns the device seam: deviceOf unless a test set another.
func (l Layout[ID]) devOf() func(fs.FileInfo) uint64 {
	if l.devices != nil {
		return l.devices
	}
	return deviceOf
}
