package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// defaultFilePerm and defaultDirPerm are the modes Write gives a file and
// a directory. Like [os.WriteFile], the process's umask applies to them.
const (
	defaultFilePerm fs.FileMode = 0o644
	defaultDirPerm  fs.FileMode = 0o755
)

// checkMode refuses a mode the layout does not write: the setuid, setgid
// and sticky bits, any type but a regular file, a directory and a symbolic
// link, and a directory its owner cannot read, write and search.
func checkMode(name string, mode fs.FileMode) *NameError {
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

// checkLinkTarget refuses the target of link name (clean, its cleaned
// form) unless it is a relative, slash-separated path that stays inside
// the directory, as written. Following links on the way may still lead
// outside: the staged walk's check of where each link resolves has the
// last word.
func checkLinkTarget(name, clean, target string) *NameError {
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
	case len(target) > maxPath:
		rule = fmt.Sprintf("is a symbolic link whose target is %d bytes long, over the %d-byte limit of a path", len(target), maxPath)
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

// checkResolves reports, as a NameError, a link name in sr that does not
// resolve to an entry of sr: os.Root follows links and refuses any that
// leads outside it, even on the way.
func checkResolves(sr *os.Root, name string) *NameError {
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
