package dirlife

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
)

// Prune removes every entry under Root except the directories of the IDs in
// keep, and returns once they are gone (with [Layout.DeferRemoval], once
// they are out of every ID's path). It waits for running writes, so it
// never removes a directory being filled. An ID in keep without a
// directory is ignored, unless a rewrite without an atomic exchange left
// its last published directory moved aside: Prune restores it. After power
// loss a pruned ID may be listed again, complete: to roll back for good,
// write a new ID. A missing Root is no error; [ErrUnsafeRoot] and
// [ErrNotOwned] roots are refused, and mounts kept ([ErrMountPoint]). An
// entry that another call of this process is removing already, Prune
// waits for as for its own (unless [Layout.DeferRemoval]), and that
// removal's failure is its failure too. Prune goes on past a failed entry
// and returns every error, with the failures of earlier removals no call
// waited for; a removal still running at [Layout.RemovalDeadline] is a
// [*StalledError], and goes on. Under [Layout.Link] it tells Link, holding
// the lock, of each directory it sets aside (Gone).
func (l Layout[ID]) Prune(keep ...ID) error {
	return l.prune(context.Background(), keep...)
}

// prune is Prune, whose waits for removals also end when ctx ends.
func (l Layout[ID]) prune(ctx context.Context, keep ...ID) error {
	// Under Root's exclusive lock, Prune unlinks every entry that is not a
	// directory and renames every directory it removes to a fresh aside
	// name, out of its path, so that a reader finds it complete or absent
	// and no ID or staging directory can take the name it is removed
	// under. It removes those trees after it lets the lock go, so that
	// writes do not wait for that; an entry another call of this process
	// is removing is left to that call's removal, which Prune waits for as
	// for its own. Of several stranded copies of one ID, the one moved
	// aside last, as the clock tells, is restored; the others are garbage.
	//
	// Prune syncs nothing: garbage needs no sync. The rename that takes a
	// directory out of its path precedes every removal in it, journaling
	// filesystems commit metadata in order, and the next durable write's
	// sync of Root commits the renames too; so after power loss a pruned
	// ID is back complete, never partial, and the next Prune removes it.
	if l.Codec == nil {
		return ErrNoCodec // it could not tell the kept directories
	}
	h, err := l.openRoot("prune", false, rootlock.Exclusive)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	defer h.unlock() // also when Link panics: unlocked once already, as a rule
	keepNames := make(map[string]bool, len(keep))
	for _, id := range keep {
		if name, err := l.name(id); err == nil {
			keepNames[name] = true
		}
	}
	st := h.lock.St
	st.Retain()
	defer rootlock.Put(st)
	doomed, busy, err := l.setAside(h, "prune", keepNames, !l.DeferRemoval)
	batch, rerr := l.removeGarbage(st, h, doomed, l.DeferRemoval)
	h.unlock()
	err = errors.Join(err, rerr)
	if !l.DeferRemoval {
		// One wait, one deadline, for its own and those of other calls:
		// what another call was removing is gone only if that removal
		// succeeded.
		err = errors.Join(err, l.wait(ctx, st, append(batch, busy...), removal.CollectOwn))
	}
	return errors.Join(err, st.Removals.TakeErr(h.r))
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
	h, err := l.openRoot("reset", true, rootlock.Exclusive)
	if err != nil {
		return err
	}
	defer h.close()
	defer h.unlock() // also when Link panics: unlocked once already, as a rule
	st := h.lock.St
	st.Retain()
	defer rootlock.Put(st)
	doomed, busy, err := l.setAside(h, "reset", nil, true)
	batch, rerr := l.removeGarbage(st, h, doomed, false)
	h.unlock()
	err = errors.Join(err, rerr)
	// One wait, one deadline, for its own and those of other calls. What
	// another call was removing is gone only if that removal succeeded:
	// its failure is Reset's too.
	err = errors.Join(err, l.wait(context.Background(), st, append(batch, busy...), removal.CollectOwn))
	if err == nil {
		st.Removals.TakeErr(nil) // whatever failed before is gone now
	}
	return err
}

// setAside lists Root, under its exclusive lock, restores the moved-aside
// copy of each ID in keep whose path is empty (see names.StrandedCopies), and
// sets aside the garbage: every entry but the layout's own, the kept IDs'
// directories and those another call of this process is removing (busy:
// when join is set, returned as such, with the caller counted as a waiter
// of each, which it must then wait for with wait). An entry that is not a
// directory is unlinked at once; a directory is renamed to a fresh aside
// name of its own, unless it has one already (a plain moved-aside entry,
// which no ID or staging directory can take), and returned as garbage.
// Nothing is synced: garbage needs no sync (see the comment in Prune).
func (l Layout[ID]) setAside(h *openRoot, op string, keep map[string]bool, join bool) (doomed []removal.Garbage, busy []*removal.Removal, errs error) {
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
	restore := names.StrandedCopies(entries, keep)
	rm := &h.lock.St.Removals
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
		if _, ok := restore.From[name]; ok {
			continue // restored below
		}
		if inflight, ok := rm.InFlight(name, join); ok {
			if join {
				busy = append(busy, inflight) // its failure is the caller's too
			}
			continue // left to the call removing it
		}
		if !e.IsDir() {
			// A file, a symbolic link: unlinked here, in one step, so its
			// name is free when the lock is let go.
			if err := h.r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = errors.Join(errs, removal.Err(l.Root, name, err))
			}
			l.dropLinked(name)
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
			err = &removal.MountError{Root: l.Root, Path: name}
		}
		aside := name
		if err == nil && !names.IsPlainAside(name) {
			aside = names.TempName(asidePrefix)
			err = h.r.Rename(name, aside)
		}
		if err != nil {
			errs = errors.Join(errs, removal.Err(l.Root, name, err))
			continue
		}
		l.dropLinked(name) // before its files go
		doomed = append(doomed, removal.Garbage{Name: aside, Was: name})
	}
	for from, to := range restore.From {
		// The last published copy of a kept ID whose path is empty: back
		// into place.
		if err := h.r.Rename(from, to); err != nil {
			errs = errors.Join(errs, fmt.Errorf("dirlife: %s: restore %s from %s: %w", op, filepath.Join(l.Root, to), from, err))
		}
	}
	return doomed, busy, errs
}

// devOf returns the device seam: deviceOf unless a test set another.
func (l Layout[ID]) devOf() func(fs.FileInfo) uint64 {
	if l.devices != nil {
		return l.devices
	}
	return sys.DeviceOf
}
