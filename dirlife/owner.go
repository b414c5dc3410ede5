package dirlife

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
)

// How a root records that a layout owns it.
type ownership int

const (
	unclaimed ownership = iota // empty but for the layout's own leftovers; claimed under the lock
	byAttr                     // the extended attribute ownerAttr on Root itself
	byMarker                   // the marker file, where Root's filesystem holds no extended attribute
	legacy                     // the marker file of earlier versions, on a filesystem that can hold the attribute: migrated under the lock
)

// ownerAttr is the extended attribute that marks a root as a layout's, and
// ownerValue its value. On a filesystem that cannot hold it (see
// attrUnsupported), the marker file markerName in Root does instead.
const (
	ownerAttr  = "user.leasekit.dirlife"
	ownerValue = "leasekit.dev/dirlife root"
)

// stepOwnerAttr names the reading and setting of ownerAttr to the fault
// seam; an injected attrUnsupported error stands for a filesystem without
// extended attributes.
const stepOwnerAttr = "xattr"

// hasOwnerAttr reports whether dir carries ownerAttr with ownerValue.
func (l Layout[ID]) hasOwnerAttr(dir *os.File) (bool, error) {
	if err := l.fault(stepOwnerAttr, "."); err != nil {
		return false, err
	}
	buf := make([]byte, len(ownerValue)+1)
	n, ok, err := sys.GetAttr(dir, ownerAttr, buf)
	return ok && string(buf[:n]) == ownerValue, err
}

func (l Layout[ID]) setOwnerAttr(dir *os.File) error {
	if err := l.fault(stepOwnerAttr, "."); err != nil {
		return err
	}
	return sys.SetAttr(dir, ownerAttr, []byte(ownerValue))
}

// getDigestAttr returns the Digest recorded in digestAttr on f, and
// whether f carries one that parses.
func getDigestAttr(f *os.File) (Digest, bool, error) {
	var d Digest
	buf := make([]byte, 2*len(d)+1)
	n, ok, err := sys.GetAttr(f, digestAttr, buf)
	if !ok || err != nil {
		return d, false, err
	}
	d, ok = parseDigest(buf[:n])
	return d, ok, nil
}

// setDigestAttr records d in digestAttr on f.
func setDigestAttr(f *os.File, d Digest) error {
	return sys.SetAttr(f, digestAttr, []byte(d.String()))
}

// ownedBy tells how r records its owner, in O(1) system calls when it is
// owned: one attribute read (a marker look-up on filesystems without
// them). For a root that is not, it reads Root's entries only until it
// finds one that is not the layout's own, and returns a rootError wrapping
// ErrNotOwned naming it.
//
// A claimant sets the attribute (or writes the marker) before it creates
// any entry and nothing ever removes it, so an entry seen before the
// second look at the attribute implies that look finds it.
func (l Layout[ID]) ownedBy(op string, r *os.Root, dir *os.File) (ownership, error) {
	own, err := l.recorded(op, r, dir)
	if err != nil || own != unclaimed {
		return own, err
	}
	foreign, err := firstForeign(r)
	if err != nil {
		return 0, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	if foreign == "" {
		return unclaimed, nil
	}
	if own, err = l.recorded(op, r, dir); err != nil || own != unclaimed {
		return own, err
	}
	return 0, &rootError{Op: op, Root: l.Root,
		Rule: fmt.Sprintf("it is not empty and was never claimed by a layout (it holds %q and has neither the %s attribute nor a %s marker)", foreign, ownerAttr, markerName),
		Err:  ErrNotOwned}
}

// recorded looks for the attribute, then for a marker file.
func (l Layout[ID]) recorded(op string, r *os.Root, dir *os.File) (ownership, error) {
	has, err := l.hasOwnerAttr(dir)
	switch {
	case has:
		return byAttr, nil
	case err != nil && !sys.AttrUnsupported(err):
		return 0, fmt.Errorf("dirlife: %s: read the %s attribute of %s: %w", op, ownerAttr, l.Root, err)
	}
	fi, serr := r.Lstat(markerName)
	switch {
	case serr == nil && fi.Mode().IsRegular() && err != nil:
		return byMarker, nil
	case serr == nil && fi.Mode().IsRegular():
		return legacy, nil
	case serr != nil && !errors.Is(serr, fs.ErrNotExist):
		return 0, fmt.Errorf("dirlife: %s: %w", op, serr)
	}
	return unclaimed, nil
}

// firstForeign returns the name of an entry of r that is not the layout's
// own leftover (a lock file, a half-written marker), or "" when there is
// none. It reads one entry at a time and stops at the first foreign one.
func firstForeign(r *os.Root) (string, error) {
	d, err := r.Open(".")
	if err != nil {
		return "", err
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(1)
		if err == io.EOF {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		n := names[0]
		// A marker that is not a regular file (a planted link) is
		// foreign: recorded found no valid one.
		if n != lockName && !strings.HasPrefix(n, markerTemp) {
			return n, nil
		}
	}
}

// claim records, under the lock, that the layout owns r: the attribute
// where the filesystem holds one, else the marker file. A root claimed by
// an earlier version's marker gets the attribute, and its marker and lock
// file are removed. It returns how r is owned now.
func (l Layout[ID]) claim(op string, r *os.Root, dir *os.File) (ownership, error) {
	own, err := l.ownedBy(op, r, dir) // again: another claimant may have been first
	if err != nil || own == byAttr || own == byMarker {
		return own, err
	}
	err = l.setOwnerAttr(dir)
	switch {
	case err == nil:
		if !l.NoSync {
			if err := sys.SyncDir(dir); err != nil {
				return 0, fmt.Errorf("dirlife: %s: claim %s: %w", op, l.Root, err)
			}
		}
		if own == legacy {
			// Migrated: the attribute says it all now.
			r.Remove(markerName)
			r.Remove(lockName)
		}
		return byAttr, nil
	case !sys.AttrUnsupported(err):
		return 0, fmt.Errorf("dirlife: %s: set the %s attribute of %s: %w", op, ownerAttr, l.Root, err)
	case own == legacy:
		return byMarker, nil
	}
	if err := l.writeMarker(r); err != nil {
		return 0, err
	}
	return byMarker, nil
}

// writeMarker writes the marker file atomically: a temporary file renamed
// into place, so no reader ever sees a partial marker.
func (l Layout[ID]) writeMarker(r *os.Root) error {
	tmp := names.TempName(markerTemp)
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
