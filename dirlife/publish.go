package dirlife

import (
	"fmt"
	"os"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
)

// publish renames the complete staging directory stage into place as name.
// It returns the root-relative name of the replaced copy, now garbage (""
// when name did not exist). A publication is never undone: once publish
// returns no error, name holds the new directory.
func (l Layout[ID]) publish(r *os.Root, dir *os.File, stage, name string) (old string, err error) {
	err = l.fault(stepRename, name)
	if err == nil {
		err = sys.RenameNoReplace(dir, stage, name)
	}
	switch {
	case err == nil:
		return "", nil
	case sys.Unsupported(err):
		// No RENAME_NOREPLACE: look, then rename. A directory created by
		// another writer between the two is replaced if it is empty (never
		// the case for a layout's directories) and refused otherwise.
		if _, serr := r.Lstat(name); os.IsNotExist(serr) {
			if err := l.rename(r, stage, name); err == nil {
				return "", nil
			} else if !sys.Exists(err) {
				return "", err
			}
		}
	case !sys.Exists(err):
		return "", err
	}

	// name exists: swap it with the staging directory.
	err = l.fault(stepExchange, name)
	if err == nil {
		err = sys.Exchange(dir, stage, name)
	}
	switch {
	case err == nil:
		return stage, nil
	case !sys.Unsupported(err):
		return "", err
	}
	return l.moveAside(r, stage, name)
}

// A strandedError reports a move-aside replacement that failed after the
// old directory left the ID's path and could not be moved back: the path
// may be empty, so the new copy in the staging directory must not be
// removed.
type strandedError struct{ err error }

func (e *strandedError) Error() string { return e.err.Error() }
func (e *strandedError) Unwrap() error { return e.err }

// moveAside replaces name with stage where no atomic exchange exists: name
// is renamed aside, stage into place, and on failure name back. The aside
// name records the ID (see names.HeldName), so that a crash between the renames,
// or a failure of the move back, leaves the last published copy where the
// next Prune that keeps the ID restores it. Once stage is in place, the old
// copy is renamed again, to a plain garbage name, so that no Prune restores
// it later; should that rename fail, it returns no old copy and the next
// Prune, finding the ID's path full, removes it.
func (l Layout[ID]) moveAside(r *os.Root, stage, name string) (old string, err error) {
	held := names.HeldName(name)
	if err := l.rename(r, name, held); err != nil {
		return "", err
	}
	if err := l.rename(r, stage, name); err != nil {
		if rerr := l.rename(r, held, name); rerr != nil {
			return "", &strandedError{fmt.Errorf("%w; and moving the old directory back from %s failed: %w (the new one is complete in %s; the next Prune that keeps this ID restores the old one)", err, held, rerr, stage)}
		}
		return "", err
	}
	garbage := names.TempName(asidePrefix)
	if err := l.rename(r, held, garbage); err != nil {
		return "", nil
	}
	return garbage, nil
}

func (l Layout[ID]) rename(r *os.Root, from, to string) error {
	if err := l.fault(stepRename, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return r.Rename(from, to)
}
