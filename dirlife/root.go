package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
)

// checkRoot refuses a Root that no layout may write to or remove from, and
// reports whether it exists.
func checkRoot(op, root string) (exists bool, err error) {
	refuse := func(rule string) (bool, error) {
		return false, &rootError{Op: op, Root: root, Rule: rule, Err: ErrUnsafeRoot}
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

// An openRoot is a checked, owned and locked root.
type openRoot struct {
	r    *os.Root
	dir  *os.File // Root's directory, for its attribute and syncs
	key  sys.Key
	own  ownership // byAttr or byMarker
	lock *rootlock.Lock
}

// release unlocks and closes the root.
func (h *openRoot) release() {
	h.unlock()
	h.close()
}

// unlock releases the lock; the root stays open.
func (h *openRoot) unlock() {
	if h.lock != nil {
		h.lock.Release()
		h.lock = nil
	}
}

// close closes the root, which must be unlocked.
func (h *openRoot) close() {
	h.dir.Close()
	h.r.Close()
}

// ownEntry reports whether name is one of the layout's own entries in the
// root, which Prune and Reset keep: the marker of a root owned by it, and
// the lock file where the system lock needs one.
func (h *openRoot) ownEntry(name string) bool {
	return (h.own == byMarker && name == markerName) || (sys.LockFileInRoot && name == lockName)
}

// openRoot checks l.Root, creates it when create is set and it is missing,
// opens it, makes sure the layout owns it, takes its lock in mode and, if
// Root was empty, claims it. Refusals touch nothing. For a missing Root
// when create is not set, it returns nil and no error. The caller releases
// what it returns.
func (l Layout[ID]) openRoot(op string, create bool, mode rootlock.Mode) (*openRoot, error) {
	exists, err := checkRoot(op, l.Root)
	if err != nil {
		return nil, err
	}
	if !exists {
		if !create {
			return nil, nil
		}
		if err := l.createRoot(); err != nil {
			return nil, fmt.Errorf("dirlife: %s: %w", op, err)
		}
		if _, err := checkRoot(op, l.Root); err != nil { // raced by a symlink
			return nil, err
		}
	}
	r, err := os.OpenRoot(l.Root)
	if err != nil {
		return nil, fmt.Errorf("dirlife: %s: %w", op, err)
	}
	h := &openRoot{r: r}
	fail := func(err error) (*openRoot, error) {
		if h.dir != nil {
			h.dir.Close()
		}
		r.Close()
		return nil, err
	}
	if h.dir, err = r.Open("."); err != nil {
		return fail(fmt.Errorf("dirlife: %s: %w", op, err))
	}
	if h.key, err = sys.KeyOf(h.dir); err != nil {
		return fail(fmt.Errorf("dirlife: %s: %w", op, err))
	}
	// Refuse a foreign root before locking it (on Windows, the lock
	// creates a file).
	if h.own, err = l.ownedBy(op, r, h.dir); err != nil {
		return fail(err)
	}
	lockDir, err := r.Open(".")
	if err != nil {
		return fail(fmt.Errorf("dirlife: %s: %w", op, err))
	}
	if h.lock, err = rootlock.Acquire(r, lockDir, h.key, mode); err != nil {
		return fail(fmt.Errorf("dirlife: %s: lock %s: %w", op, l.Root, err))
	}
	if h.own == unclaimed || h.own == legacy {
		// Under the lock no Prune or Reset runs: claim.
		if h.own, err = l.claim(op, r, h.dir); err != nil {
			h.release()
			return nil, err
		}
	}
	return h, nil
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
		err = sys.SyncDir(d)
		d.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
