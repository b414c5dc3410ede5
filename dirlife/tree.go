package dirlife

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// defaultFilePerm and defaultDirPerm are the modes of a file of [Files], or
// of a [File] whose Mode has no permission bits, and of every directory a
// Files or [Tree] implies. Like [os.WriteFile], the process's umask applies
// to them.
const (
	defaultFilePerm fs.FileMode = 0o644
	defaultDirPerm  fs.FileMode = 0o755
)

// A File is one entry of a [Tree]: a regular file with its content and
// permission bits, or a symbolic link whose target is Data.
type File struct {
	// Data is the file's content, or the target of a symbolic link.
	Data []byte

	// Mode is the file's permission bits, with [fs.ModeSymlink] for a
	// link (whose permission bits are then ignored). Zero means 0o644,
	// subject to the umask as for Files; any other permission bits are
	// set exactly, whatever the umask. The setuid, setgid and sticky bits,
	// and every other type bit, are refused (see [NameError]).
	Mode fs.FileMode
}

// perm returns the permission bits f is created with.
func (f File) perm() fs.FileMode {
	if f.Mode.Perm() == 0 {
		return defaultFilePerm
	}
	return f.Mode.Perm()
}

// Tree maps slash-separated relative paths to files and symbolic links:
// the entries of one ID's directory, with their modes. Directories are
// implied by the paths. A symbolic link must be relative and resolve, as
// the system follows it, to an entry of the same directory: one that
// would lead outside it, or to nothing, is refused.
type Tree map[string]File

// Tree returns files as a Tree: each file with mode 0o644. The contents
// are shared, not copied.
func (files Files) Tree() Tree {
	t := make(Tree, len(files))
	for name, data := range files {
		t[name] = File{Data: data}
	}
	return t
}

// WriteTree is [Layout.Write] for a [Tree]: files keep their modes, and
// symbolic links are written as links. Every name, mode and link target is
// checked before anything is written; a link that does not resolve inside
// the directory is found once the tree is staged and refused with a
// [NameError], and nothing is published.
func (l Layout[ID]) WriteTree(id ID, tree Tree) (string, error) {
	name, err := l.name(id)
	if err != nil {
		return "", err
	}
	p, err := planTree(tree)
	if err != nil {
		return "", l.writeErr(id, err)
	}
	return l.writePlan(id, name, p, func(i int) File { return tree[p.from[i]] })
}

// CheckTree reports whether [Layout.WriteTree] would accept tree's names,
// modes and link targets, as [CheckFiles] does for Files. A link's
// resolution inside the directory is checked only by WriteTree itself:
// that needs the staged tree.
func CheckTree(tree Tree) error {
	_, err := planTree(tree)
	return err
}

// planTree validates tree: its names as planFiles does, then each entry's
// mode and link target.
func planTree(tree Tree) (*plan, error) {
	if len(tree) == 0 {
		return nil, ErrNoFiles
	}
	given := make([]string, 0, len(tree))
	for name := range tree {
		given = append(given, name)
	}
	p, err := planNames(given)
	if err != nil {
		return nil, err
	}
	for i, clean := range p.names {
		f := tree[p.from[i]]
		if err := checkMode(p.from[i], f.Mode, false); err != nil {
			return nil, err
		}
		if f.Mode&fs.ModeSymlink != 0 {
			if err := checkLinkTarget(p.from[i], clean, string(f.Data)); err != nil {
				return nil, err
			}
			p.links = append(p.links, i)
		}
	}
	return p, nil
}

// checkMode refuses a mode the layout does not write: the setuid, setgid
// and sticky bits, and any type but a regular file, a symbolic link and,
// when dir is set, a directory.
func checkMode(name string, mode fs.FileMode, dir bool) *NameError {
	if bits := mode & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); bits != 0 {
		return &NameError{name, fmt.Sprintf("has mode %v: the layout refuses the setuid, setgid and sticky bits", mode)}
	}
	typ := mode.Type()
	switch {
	case typ == 0 || typ == fs.ModeSymlink:
	case typ == fs.ModeDir && dir:
		if mode.Perm()&0o700 != 0o700 {
			return &NameError{name, fmt.Sprintf("is a directory with mode %v: a directory must be readable, writable and searchable by its owner, or Prune could not remove what it holds", mode)}
		}
	case dir:
		return &NameError{name, fmt.Sprintf("has mode %v: only regular files, directories and symbolic links are written", mode)}
	default:
		return &NameError{name, fmt.Sprintf("has mode %v: a Tree holds regular files and symbolic links (its directories are implied by the paths)", mode)}
	}
	return nil
}

// checkLinkTarget refuses the target of link name (clean, its cleaned
// form) unless it is a relative, slash-separated path that stays inside
// the directory, as written. Following links on the way may still lead
// outside: checkLinks, on the staged tree, has the last word.
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

// checkLinks refuses a staged link of p that, followed as the system
// follows it (through other links), leads outside the staging directory
// sr, or to nothing.
func checkLinks(sr *os.Root, p *plan) error {
	for _, i := range p.links {
		if err := checkResolves(sr, p.names[i]); err != nil {
			err.Name = p.from[i]
			return err
		}
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
