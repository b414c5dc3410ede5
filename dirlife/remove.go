package dirlife

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
)

// removeTree removes the entry name of parent and, if it is a directory,
// everything under it, through os.Root (a symbolic link is removed, never
// followed). It never descends into a directory on another device than
// dev, Root's: a filesystem mounted under Root is refused with a
// *MountError naming it (rel, its root-relative path), and it and its
// ancestors stay. Where the system tells the root of a mount (Linux), a
// mount of Root's own filesystem (a bind mount) is refused alike. An entry
// already gone is no error: another remover may have been first.
func removeTree(parent *os.Root, name, rel string, dev uint64, devOf func(fs.FileInfo) uint64) error {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return ignoreNotExist(parent.Remove(name))
	}
	if devOf(fi) != dev {
		return &MountError{Path: rel}
	}
	sub, err := parent.OpenRoot(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Check the directory opened, not only the one looked at: it may have
	// been swapped in between. A bind mount of Root's own filesystem has
	// Root's device: the system tells its root apart where it can.
	if fi, err := sub.Stat("."); err != nil || devOf(fi) != dev {
		sub.Close()
		if err != nil {
			return err
		}
		return &MountError{Path: rel}
	}
	if mounted, err := isMountRoot(sub); err != nil || mounted {
		sub.Close()
		if err != nil {
			return err
		}
		return &MountError{Path: rel}
	}
	names, err := readNames(sub)
	var first error
	if err = ignoreNotExist(err); err != nil { // gone already: removed by another
		first = err
	}
	for _, n := range names {
		if err := removeTree(sub, n, path.Join(rel, n), dev, devOf); err != nil && first == nil {
			first = err
		}
	}
	sub.Close()
	if first != nil {
		return first
	}
	return ignoreNotExist(parent.Remove(name))
}

// readNames lists the names in r, sorted.
func readNames(r *os.Root) ([]string, error) {
	d, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	slices.Sort(names)
	return names, err
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
