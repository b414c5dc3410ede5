package dirlife

import (
	"context"
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
// Under Root's exclusive lock, Prune unlinks every entry that is not a
// directory and renames every directory it removes to a fresh aside name
// of its own, out of its path, so that a reader finds it complete or
// absent and no ID or staging directory can take the name it is removed
// under. It removes those trees after it lets the lock go, so concurrent
// Writes do not wait for that; when Prune returns, they are gone and their
// space is free (with [Layout.DeferRemoval], their removal goes on in the
// background, and [Layout.Settle] waits for it). An entry that another
// call of this process is removing is left to that call. A removal still
// running at [Layout.RemovalDeadline] makes Prune return a [*StalledError]
// naming what is left, and goes on. Prune does not sync Root: after power
// loss, a pruned ID may be listed again, as if this Prune had not run
// (see the package limits).
//
// Prune refuses, removing nothing, a Root that is empty, the filesystem
// root, a symbolic link, or a non-empty directory the layout never claimed
// ([ErrUnsafeRoot], [ErrNotOwned]). Its exclusive lock waits for running
// Writes, so it never removes a staging directory that a live Write is
// filling. It never removes across a filesystem mounted under Root
// ([ErrMountPoint]). On an error it goes on with the other entries and
// returns the errors, with the failures not yet reported of earlier
// removals that no call waited for.
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
	doomed, _, err := l.setAside(h, "prune", keepNames)
	batch, rerr := l.removeGarbage(st, h, doomed, l.DeferRemoval)
	h.unlock()
	err = errors.Join(err, rerr)
	if !l.DeferRemoval {
		err = errors.Join(err, l.wait(context.Background(), st, batch, collectOwn))
	}
	return errors.Join(err, st.rm.takeErr(h.r))
}

// Reset empties Root and makes sure it exists afterwards: the boot path,
// for state that is rebuilt from its source of truth at start. Reset needs
// no Codec. It refuses the same roots as Prune and sets everything aside
// under the same exclusive lock, and it always waits for the removals, its
// own and those this process left running: when it returns, Root holds
// nothing (but for the marker file where Root's filesystem holds no
// extended attribute, and the lock file on Windows), unless a removal is
// still running at [Layout.RemovalDeadline]: then Reset returns a
// [*StalledError] naming it, and it goes on.
func (l Layout[ID]) Reset() error {
	h, err := l.openRoot("reset", true, exclusive)
	if err != nil {
		return err
	}
	defer h.close()
	st := h.lock.st
	st.retain()
	defer putState(st)
	doomed, busy, err := l.setAside(h, "reset", nil)
	batch, rerr := l.removeGarbage(st, h, doomed, false)
	h.unlock()
	err = errors.Join(err, rerr)
	// One wait, one deadline, for its own and those of other calls. What
	// another call was removing is gone only if that removal succeeded:
	// its failure is Reset's too.
	err = errors.Join(err, l.wait(context.Background(), st, append(batch, busy...), collectAll))
	if err == nil {
		st.rm.takeErr(nil) // whatever failed before is gone now
	}
	return err
}

// setAside lists Root, under its exclusive lock, restores the moved-aside
// copy of each ID in keep whose path is empty (see strandedCopies), and
// sets aside the garbage: every entry but the layout's own, the kept IDs'
// directories and those another call of this process is removing (busy,
// returned as such). An entry that is not a directory is unlinked at once;
// a directory is renamed to a fresh aside name of its own, unless it has
// one already (a plain moved-aside entry, which no ID or staging directory
// can take), and returned as garbage. Nothing is synced: garbage needs no
// sync (see the package limits).
func (l Layout[ID]) setAside(h *openRoot, op string, keep map[string]bool) (doomed []garbage, busy []*removal, errs error) {
	d, err := h.r.Open(".")
	if err != nil {
		return nil, nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	restore := strandedCopies(entries, keep)
	rm := &h.lock.st.rm
	for _, e := range entries {
		name := e.Name()
		if h.ownEntry(name) {
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
		rm.mu.Lock()
		inflight := rm.inflight[name]
		rm.mu.Unlock()
		if inflight != nil {
			busy = append(busy, inflight) // left to the call removing it
			continue
		}
		if !e.IsDir() {
			// A file, a symbolic link: unlinked here, in one step, so its
			// name is free when the lock is let go.
			if err := h.r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = errors.Join(errs, removeErr(l.Root, name, err))
			}
			continue
		}
		// Out of its path first, atomically, so that a reader never finds
		// it half removed and no later Prune restores it; but never a
		// mount point.
		fi, err := h.r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && l.devOf()(fi) != dev {
			err = &MountError{Root: l.Root, Path: name}
		}
		aside := name
		if err == nil && !isPlainAside(name) {
			aside = tempName(asidePrefix)
			err = h.r.Rename(name, aside)
		}
		if err != nil {
			errs = errors.Join(errs, removeErr(l.Root, name, err))
			continue
		}
		doomed = append(doomed, garbage{name: aside, was: name})
	}
	for from, to := range restore.from {
		// The last published copy of a kept ID whose path is empty: back
		// into place.
		if err := h.r.Rename(from, to); err != nil {
			errs = errors.Join(errs, fmt.Errorf("dirlife: %s: restore %s from %s: %w", op, filepath.Join(l.Root, to), from, err))
		}
	}
	return doomed, busy, errs
}

// isPlainAside reports whether name is an aside name as tempName makes
// them: one that no ID, staging directory or other aside entry takes.
func isPlainAside(name string) bool {
	rest, ok := strings.CutPrefix(name, asidePrefix)
	return ok && len(rest) == 16 && isLowerHex(rest) && rest[0] >= '8'
}

// devOf returns the device seam: deviceOf unless a test set another.
func (l Layout[ID]) devOf() func(fs.FileInfo) uint64 {
	if l.devices != nil {
		return l.devices
	}
	return deviceOf
}
