package dirlife

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

const (
	maxElement = 255  // bytes in one path element (NAME_MAX)
	maxPath    = 4095 // bytes in a file's relative path (PATH_MAX less the NUL)
)

// MarkerFile is the name of the file that records a layout's ownership of
// its root where the root's filesystem holds no extended attribute (and on
// systems other than Linux and macOS). It stays in the root at rest, beside
// the ID directories; a checker of "Root holds only ID directories" skips
// it.
const MarkerFile = markerName

// LockFile is the name of the file the layout locks on Windows, where a
// directory cannot be locked. It stays in the root at rest there.
const LockFile = lockName

// The layout's own names in the root. Codecs never produce a leading dot, so
// none of these can collide with an ID's directory.
const (
	markerName   = ".dirlife-root"
	lockName     = ".dirlife-lock"
	stagePrefix  = ".stage-"
	asidePrefix  = ".aside-"
	markerTemp   = ".marker-"
	linkPrefix   = ".link-" // a link in the staging tree, before it replaces a written file
	markerText   = "This directory is managed by leasekit.dev/dirlife: Prune and Reset remove everything in it.\n"
	reservedLead = "."
)

// checkElement reports whether name is a single safe and portable path
// element: what a Codec must produce for an ID's directory.
func checkElement(name string) *NameError {
	switch {
	case name == "":
		return &NameError{name, "is empty"}
	case name == "." || name == "..":
		return &NameError{name, "is a relative directory reference"}
	case strings.ContainsRune(name, 0):
		return &NameError{name, "contains a NUL byte"}
	case strings.ContainsAny(name, `/\`):
		return &NameError{name, "is not a single path element (contains a slash or backslash)"}
	case len(name) > maxElement:
		return &NameError{name, fmt.Sprintf("is %d bytes long, over the %d-byte limit of a path element", len(name), maxElement)}
	case strings.HasPrefix(name, reservedLead):
		return &NameError{name, "starts with a dot, which the layout reserves for its own entries"}
	}
	return checkPortable(name)
}

// cleanFile validates one relative, slash-separated file name of a Files
// map and returns its cleaned form.
func cleanFile(name string) (string, *NameError) {
	switch {
	case name == "":
		return "", &NameError{name, "is empty"}
	case strings.ContainsRune(name, 0):
		return "", &NameError{name, "contains a NUL byte"}
	case strings.ContainsRune(name, '\\'):
		return "", &NameError{name, "contains a backslash (names are slash-separated)"}
	case path.IsAbs(name):
		return "", &NameError{name, "is absolute"}
	case len(name) > maxPath:
		return "", &NameError{name, fmt.Sprintf("is %d bytes long, over the %d-byte limit of a path", len(name), maxPath)}
	}
	clean := path.Clean(name)
	switch {
	case clean == ".":
		return "", &NameError{name, "names the directory itself, not a file in it"}
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", &NameError{name, "escapes the directory"}
	}
	for elem := range strings.SplitSeq(clean, "/") {
		if len(elem) > maxElement {
			return "", &NameError{name, fmt.Sprintf("has a %d-byte element, over the %d-byte limit", len(elem), maxElement)}
		}
		if err := checkPortable(elem); err != nil {
			if elem != name {
				err.Rule = fmt.Sprintf("has an element %q that %s", elem, err.Rule)
			}
			err.Name = name
			return "", err
		}
	}
	return clean, nil
}

// plan is a validated Files map: cleaned names in a fixed order, and every
// directory the files need, parents before children.
type plan struct {
	names []string // cleaned, sorted
	from  []string // from[i]: the name as given for names[i]
	dirs  []string // sorted, so parents come first
}

// planFiles validates every name in files before anything is written.
func planFiles(files Files) (*plan, error) {
	if len(files) == 0 {
		return nil, ErrNoFiles
	}
	given := make([]string, 0, len(files))
	for name := range files {
		given = append(given, name)
	}
	return planNames(given)
}

// planNames validates the file names given, not empty, before anything is
// written. It sorts given.
func planNames(given []string) (*plan, error) {
	slices.Sort(given) // deterministic errors and write order

	p := &plan{}
	seen := make(map[string]string, len(given)) // cleaned -> as given
	for _, name := range given {
		clean, err := cleanFile(name)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[clean]; dup {
			return nil, &NameError{name, fmt.Sprintf("is the same file as %q after cleaning", other)}
		}
		seen[clean] = name
		p.names = append(p.names, clean)
		p.from = append(p.from, name)
	}
	dirs := map[string]string{} // directory -> the first file (as given) in it
	for _, clean := range p.names {
		for d := path.Dir(clean); d != "."; d = path.Dir(d) {
			if other, isFile := seen[d]; isFile {
				return nil, &NameError{other, fmt.Sprintf("is a file but also the directory of %q", seen[clean])}
			}
			if _, ok := dirs[d]; ok {
				break // and so are its parents
			}
			dirs[d] = seen[clean]
		}
	}
	for d := range dirs {
		p.dirs = append(p.dirs, d)
	}
	slices.Sort(p.dirs)
	if err := checkCase(p, seen, dirs); err != nil {
		return nil, err
	}
	// Sort names too, keeping from aligned.
	idx := make([]int, len(p.names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(p.names[a], p.names[b]) })
	names, from := make([]string, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		names[i], from[i] = p.names[j], p.from[j]
	}
	p.names, p.from = names, from
	return p, nil
}

// checkCase refuses two paths of p, files or directories, that differ only
// by case: on a case-insensitive filesystem they are one entry. The error
// names both files as given, the later path in sorted order as the
// NameError's Name. files maps a cleaned file name to the name as given,
// dirs a directory to a file in it, as given.
//
// Two paths that foldKey leaves as they are cannot collide, so only the
// others are looked up: a module of lower-case names costs no allocation.
func checkCase(p *plan, files, dirs map[string]string) *NameError {
	type entry struct{ path, given string }
	var folded map[string]entry // the paths foldKey changes, by key
	collide := func(a, b entry) *NameError {
		if a.path > b.path {
			a, b = b, a
		}
		return &NameError{b.given, fmt.Sprintf("%s: %s and %s", ruleCase, describe(a.path, a.given), describe(b.path, b.given))}
	}
	check := func(e entry) *NameError {
		key := foldKey(e.path)
		if key == e.path {
			return nil // found from the other side, if it collides
		}
		if given, ok := files[key]; ok {
			return collide(entry{key, given}, e)
		}
		if given, ok := dirs[key]; ok {
			return collide(entry{key, given}, e)
		}
		if other, ok := folded[key]; ok {
			return collide(other, e)
		}
		if folded == nil {
			folded = make(map[string]entry)
		}
		folded[key] = e
		return nil
	}
	for _, d := range p.dirs {
		if err := check(entry{d, dirs[d]}); err != nil {
			return err
		}
	}
	for _, clean := range p.names {
		if err := check(entry{clean, files[clean]}); err != nil {
			return err
		}
	}
	return nil
}

// describe quotes a path as cleaned, and the file name it comes from when
// that differs.
func describe(clean, given string) string {
	if clean == given {
		return fmt.Sprintf("%q", given)
	}
	return fmt.Sprintf("%q (in %q)", clean, given)
}
