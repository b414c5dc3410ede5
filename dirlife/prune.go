package dirlife

import (
	"fmt"
	"os"
)

// Prune removes every entry under Root except the directories of the IDs in
// keep: superseded IDs, staging leftovers of failed or killed Writes,
// moved-aside copies and anything else. An ID's directory is renamed out of
// its path before it is removed, so a reader finds it complete or absent,
// never half removed. The layout's marker and lock files
// stay. A missing Root is not an error; an ID in keep without a directory is
// ignored.
//
// Prune refuses, removing nothing, a Root that is empty, the filesystem
// root, a symbolic link, or a non-empty directory without the layout's
// marker ([ErrUnsafeRoot], [ErrNotOwned]). It holds Root's lock exclusively:
// it waits for running Writes, so it never removes a staging directory that
// a live Write is filling. On a removal error it goes on with the other
// entries and returns the first error.
func (l Layout[ID]) Prune(keep ...ID) error {
	if l.Codec == nil {
		return ErrNoCodec // it could not tell the kept directories
	}
	r, release, err := l.openRoot("prune", false, exclusive)
	if err != nil || r == nil {
		return err
	}
	defer release()
	keepNames := make(map[string]bool, len(keep))
	for _, id := range keep {
		if name, err := l.name(id); err == nil {
			keepNames[name] = true
		}
	}
	return l.removeAllBut(r, "prune", func(e os.DirEntry) bool {
		_, isID := l.parse(e)
		return isID && keepNames[e.Name()]
	})
}

// Reset empties Root, but for the layout's own marker and lock files, and
// makes sure Root exists afterwards: the boot path, for state that is
// rebuilt from its source of truth at start. Reset refuses the same roots
// as Prune, and holds the same exclusive lock.
func (l Layout[ID]) Reset() error {
	r, release, err := l.openRoot("reset", true, exclusive)
	if err != nil {
		return err
	}
	defer release()
	return l.removeAllBut(r, "reset", func(os.DirEntry) bool { return false })
}

// removeAllBut removes every entry of r except the layout's own files and
// those kept, then syncs r unless NoSync.
func (l Layout[ID]) removeAllBut(r *os.Root, op string, kept func(os.DirEntry) bool) error {
	d, err := r.Open(".")
	if err != nil {
		return fmt.Errorf("dirlife: %s: %w", op, err)
	}
	entries, err := d.ReadDir(0)
	d.Close()
	if err != nil {
		return fmt.Errorf("dirlife: %s: %w", op, err)
	}
	var first error
	removed := false
	for _, e := range entries {
		if e.Name() == markerName || e.Name() == lockName || kept(e) {
			continue
		}
		name := e.Name()
		if _, isID := l.parse(e); isID {
			// Out of the ID's path first, atomically, so that a reader
			// never finds it half removed.
			aside := tempName(asidePrefix)
			if err := r.Rename(name, aside); err != nil {
				if first == nil {
					first = fmt.Errorf("dirlife: %s: %w", op, err)
				}
				continue
			}
			name = aside
		}
		// RemoveAll through the Root removes a symbolic link itself, never
		// what it points to.
		if err := r.RemoveAll(name); err != nil && first == nil {
			first = fmt.Errorf("dirlife: %s: %w", op, err)
		}
		removed = true
	}
	if removed && !l.NoSync {
		if err := syncDir(r, "."); err != nil && first == nil {
			first = fmt.Errorf("dirlife: %s: %w", op, err)
		}
	}
	return first
}
