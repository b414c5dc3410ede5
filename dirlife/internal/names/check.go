package names

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"leasekit.dev/dirlife/internal/tree"
)

// CheckMode refuses a mode the layout does not write: the setuid, setgid
// and sticky bits, any type but a regular file, a directory and a symbolic
// link, and a directory its owner cannot read, write and search.
func CheckMode(name string, mode fs.FileMode) *NameError {
	if bits := mode & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); bits != 0 {
		return &NameError{name, fmt.Sprintf("has mode %v: the layout refuses the setuid, setgid and sticky bits", mode)}
	}
	typ := mode.Type()
	switch {
	case typ == 0 || typ == fs.ModeSymlink:
	case typ == fs.ModeDir:
		if mode.Perm()&0o700 != 0o700 {
			return &NameError{name, fmt.Sprintf("is a directory with mode %v: a directory must be readable, writable and searchable by its owner, or Prune could not remove what it holds", mode)}
		}
	default:
		return &NameError{name, fmt.Sprintf("has mode %v: only regular files, directories and symbolic links are written", mode)}
	}
	return nil
}

// CheckLinkTarget refuses the target of link name (clean, its cleaned
// form) unless it is a relative, slash-separated path that stays inside
// the directory, as written. Following links on the way may still lead
// outside: the staged walk's check of where each link resolves has the
// last word.
func CheckLinkTarget(name, clean, target string) *NameError {
	rule := ""
	switch {
	case target == "":
		rule = "is a symbolic link with an empty target"
	case strings.ContainsRune(target, 0):
		rule = "is a symbolic link whose target contains a NUL byte"
	case strings.ContainsRune(target, '\\'):
		rule = fmt.Sprintf("is a symbolic link to %q, which contains a backslash (targets are slash-separated)", target)
	case path.IsAbs(target):
		rule = fmt.Sprintf("is a symbolic link to %q, an absolute path: links must stay inside the directory", target)
	case len(target) > MaxPath:
		rule = fmt.Sprintf("is a symbolic link whose target is %d bytes long, over the %d-byte limit of a path", len(target), MaxPath)
	default:
		if to := path.Join(path.Dir(clean), target); to == ".." || strings.HasPrefix(to, "../") {
			rule = fmt.Sprintf("is a symbolic link to %q, which leads outside the directory", target)
		}
	}
	if rule != "" {
		return &NameError{name, rule}
	}
	return nil
}

// CheckResolves reports, as a NameError, a link name in sr that does not
// resolve to an entry of sr: os.Root follows links and refuses any that
// leads outside it, even on the way.
func CheckResolves(sr *os.Root, name string) *NameError {
	_, err := sr.Stat(name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return &NameError{name, "is a symbolic link to nothing: links must resolve to an entry of the directory"}
	default:
		return &NameError{name, fmt.Sprintf("is a symbolic link that does not resolve inside the directory: %v", unwrapPath(err))}
	}
}

// unwrapPath returns the error inside a *PathError, whose path is the
// staging directory's and means nothing to the caller.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckSiblingCase refuses two names of one directory, names sorted, that
// differ only by case. Only the names that case folding changes are
// looked up: a directory of lower-case names costs no allocation.
func CheckSiblingCase(dir string, names []string) error {
	var folded map[string]string
	for _, n := range names {
		key := FoldKey(n)
		if key == n {
			continue
		}
		other, ok := folded[key]
		if !ok {
			if _, found := slices.BinarySearch(names, key); found {
				other, ok = key, true
			}
		}
		if ok {
			a, b := min(other, n), max(other, n)
			return &NameError{tree.PathJoin(dir, b), fmt.Sprintf("%s: %q and %q", RuleCase, tree.PathJoin(dir, a), tree.PathJoin(dir, b))}
		}
		if folded == nil {
			folded = map[string]string{}
		}
		folded[key] = n
	}
	return nil
}
