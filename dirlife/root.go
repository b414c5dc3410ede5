package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkRoot refuses a Root that no layout may write to or remove from, and
// reports whether it exists.
func checkRoot(op, root string) (exists bool, err error) {
	refuse := func(rule string) (bool, error) {
		return false, &RootError{Op: op, Root: root, Rule: rule, Err: ErrUnsafeRoot}
	}
	if root == "" {
		return refuse("it is the empty string")
	}
	clean := filepath.Clean(root)
	if vol := filepath.VolumeName(clean); clean == vol+string(filepath.Separator) || clean == vol {
		return refuse("it is a filesystem root")
	}
	fi, err := os.Lstat(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("dirlife: %s: %w", op, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse("it is a symbolic link")
	case !fi.IsDir():
		return refuse("it is not a directory")
	}
	return true, nil
}

// A lockMode says how a method holds the root's lock.
type lockMode int

const (
	shared    lockMode = iota // Write: many at once
	exclusive                 // Prune, Reset: alone
)

// openRoot checks l.Root, creates it when create is set and it is missing,
// opens it, takes its lock in mode and makes sure the layout owns it: the
// marker is there, or Root is empty and gets the marker now. Refusals touch
// nothing. For a missing Root when create is not set, it returns a nil
// *os.Root and no error. The caller closes what it returns with release.
func (l Layout[ID]) openRoot(op string, create bool, mode lockMode) (r *os.Root, release func(), err error) {
	exists, err := checkRoot(op, l.Root)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		if !create {
			return nil, nil, nil
		}
		if err := l.createRoot(); err != nil {
			return nil, nil, fmt.Errorf("dirlife: %s: %w", op, err)
		}
		if _, err := checkRoot(op, l.Root); err != nil { // raced by a symlink
			return nil, nil, err
		}
	}
	r, err = os.OpenRoot(l.Root)
	if err != nil {
		return nil, nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	// Refuse a foreign root before creating the lock file in it.
	owned, err := l.owned(op, r)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	lock, err := acquireLock(r, mode)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("dirlife: %s: lock %s: %w", op, l.Root, err)
	}
	release = func() {
		lock.release()
		r.Close()
	}
	if !owned {
		// Under the lock, no Prune or Reset is running: recheck and claim.
		if owned, err = l.owned(op, r); err == nil && !owned {
			err = l.writeMarker(r)
		}
		if err != nil {
			release()
			return nil, nil, err
		}
	}
	return r, release, nil
}

// createRoot creates Root and its missing parents and, unless NoSync,
// syncs the directory above each one it created, so that Root itself
// survives power loss along with what is written in it.
func (l Layout[ID]) createRoot() error {
	var created []string
	for p := filepath.Clean(l.Root); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		created = append(created, p)
	}
	if err := os.MkdirAll(l.Root, 0o755); err != nil {
		return err
	}
	if l.NoSync {
		return nil
	}
	for _, p := range created {
		d, err := os.Open(filepath.Dir(p))
		if err != nil {
			return err
		}
		err = syncDirFile(d)
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// owned reports whether r carries the marker. It returns false and no error
// for a root that is empty but for the layout's own files, and a RootError
// wrapping ErrNotOwned for any other root.
//
// The listing comes before the look at the marker: a layout writes the
// marker before anything else and never removes it, so an entry of a
// concurrent claimant's in the listing implies the marker is seen after.
func (l Layout[ID]) owned(op string, r *os.Root) (bool, error) {
	d, err := r.Open(".")
	if err != nil {
		return false, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	names, err := d.Readdirnames(0)
	d.Close()
	if err != nil {
		return false, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	fi, err := r.Lstat(markerName)
	if err == nil && fi.Mode().IsRegular() {
		return true, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	for _, n := range names {
		// A marker that is not a regular file (a planted link) is foreign
		// too; one listed but not found by Lstat is not possible, as
		// markers are never removed.
		ownFile := n == lockName || strings.HasPrefix(n, markerTemp) || (n == markerName && err != nil)
		if !ownFile {
			return false, &RootError{Op: op, Root: l.Root,
				Rule: fmt.Sprintf("it is not empty and has no %s marker (it holds %q)", markerName, n),
				Err:  ErrNotOwned}
		}
	}
	return false, nil
}

// writeMarker writes the marker file atomically: a temporary file renamed
// into place, so no reader ever sees a partial marker.
func (l Layout[ID]) writeMarker(r *os.Root) error {
	tmp := tempName(markerTemp)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("dirlife: write marker: %w", err)
	}
	_, err = f.WriteString(markerText)
	if err == nil && !l.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, markerName)
	}
	if err == nil && !l.NoSync {
		err = syncDir(r, ".")
	}
	if err != nil {
		r.Remove(tmp)
		return fmt.Errorf("dirlife: write marker: %w", err)
	}
	return nil
}
