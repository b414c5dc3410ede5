package dirlife

import (
	"fmt"
	"os"
)

// publish renames the complete staging directory stage into place as name.
// It returns the root-relative name of the replaced copy to remove ("" when
// name did not exist) and an undo that restores the previous state, for a
// failure after publication.
func (l Layout[ID]) publish(r *os.Root, dir *os.File, stage, name string) (old string, undo func() error, err error) {
	err = l.fault(stepRename, name)
	if err == nil {
		err = renameNoReplace(dir, stage, name)
	}
	switch {
	case err == nil:
		return "", func() error { return l.rename(r, name, stage) }, nil
	case unsupported(err):
		// No RENAME_NOREPLACE: look, then rename. A directory created by
		// another writer between the two is replaced if it is empty (never
		// the case for a layout's directories) and refused otherwise.
		if _, serr := r.Lstat(name); os.IsNotExist(serr) {
			if err := l.rename(r, stage, name); err == nil {
				return "", func() error { return l.rename(r, name, stage) }, nil
			} else if !exists(err) {
				return "", nil, err
			}
		}
	case !exists(err):
		return "", nil, err
	}

	// name exists: swap it with the staging directory.
	err = l.fault(stepExchange, name)
	if err == nil {
		err = exchange(dir, stage, name)
	}
	switch {
	case err == nil:
		return stage, func() error { return l.exchange(dir, stage, name) }, nil
	case !unsupported(err):
		return "", nil, err
	}
	return l.moveAside(r, stage, name)
}

// moveAside replaces name with stage where no atomic exchange exists: name
// is renamed aside, stage into place, and on failure name back.
func (l Layout[ID]) moveAside(r *os.Root, stage, name string) (old string, undo func() error, err error) {
	aside := tempName(asidePrefix)
	if err := l.rename(r, name, aside); err != nil {
		return "", nil, err
	}
	if err := l.rename(r, stage, name); err != nil {
		if rerr := l.rename(r, aside, name); rerr != nil {
			return "", nil, fmt.Errorf("%w; and moving the old directory back from %s failed: %w", err, aside, rerr)
		}
		return "", nil, err
	}
	undo = func() error {
		if err := l.rename(r, name, stage); err != nil {
			return err
		}
		return l.rename(r, aside, name)
	}
	return aside, undo, nil
}

func (l Layout[ID]) rename(r *os.Root, from, to string) error {
	if err := l.fault(stepRename, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return r.Rename(from, to)
}

func (l Layout[ID]) exchange(dir *os.File, a, b string) error {
	if err := l.fault(stepExchange, b); err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return exchange(dir, a, b)
}
