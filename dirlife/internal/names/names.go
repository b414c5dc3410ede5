// Package names holds the rules a dirlife layout checks every name and
// staged entry against before it publishes it, and the [NameError] that
// reports a refusal: names that stay inside the directory and hold as
// written on Linux, Windows and macOS, and entries a layout can remove.
// It also makes and reads the names a layout gives its own entries in a
// root: temporary names, and the names of copies moved aside that record
// their ID, from which a Prune restores an interrupted rewrite.
package names

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

const (
	MaxElement = 255  // bytes in one path element (NAME_MAX)
	MaxPath    = 4095 // bytes in a file's relative path (PATH_MAX less the NUL)
)

// ErrInvalidName is wrapped by every [NameError].
var ErrInvalidName = errors.New("invalid name")

// A NameError reports a name or an entry that the layout refuses, and the
// rule it breaks; dirlife documents the rules where it names the type.
type NameError struct {
	Name string // the name as given
	Rule string // the rule it breaks, such as "escapes the directory"
}

// Error returns "dirlife: name <name>: <rule>".
func (e *NameError) Error() string {
	return fmt.Sprintf("dirlife: name %q: %s", e.Name, e.Rule)
}

// Unwrap returns [ErrInvalidName].
func (e *NameError) Unwrap() error { return ErrInvalidName }

// CheckElement reports whether name is a single safe and portable path
// element that does not start with a dot: what a Codec must produce for
// an ID's directory.
func CheckElement(name string) *NameError {
	switch {
	case name == "":
		return &NameError{name, "is empty"}
	case name == "." || name == "..":
		return &NameError{name, "is a relative directory reference"}
	case strings.ContainsRune(name, 0):
		return &NameError{name, "contains a NUL byte"}
	case strings.ContainsAny(name, `/\`):
		return &NameError{name, "is not a single path element (contains a slash or backslash)"}
	case len(name) > MaxElement:
		return &NameError{name, fmt.Sprintf("is %d bytes long, over the %d-byte limit of a path element", len(name), MaxElement)}
	case strings.HasPrefix(name, "."):
		return &NameError{name, "starts with a dot, which the layout reserves for its own entries"}
	}
	return checkPortable(name)
}

// CleanFile validates one relative, slash-separated file name and returns
// its cleaned form.
func CleanFile(name string) (string, *NameError) {
	switch {
	case name == "":
		return "", &NameError{name, "is empty"}
	case strings.ContainsRune(name, 0):
		return "", &NameError{name, "contains a NUL byte"}
	case strings.ContainsRune(name, '\\'):
		return "", &NameError{name, "contains a backslash (names are slash-separated)"}
	case path.IsAbs(name):
		return "", &NameError{name, "is absolute"}
	case len(name) > MaxPath:
		return "", &NameError{name, fmt.Sprintf("is %d bytes long, over the %d-byte limit of a path", len(name), MaxPath)}
	}
	clean := path.Clean(name)
	switch {
	case clean == ".":
		return "", &NameError{name, "names the directory itself, not a file in it"}
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return "", &NameError{name, "escapes the directory"}
	}
	for elem := range strings.SplitSeq(clean, "/") {
		if len(elem) > MaxElement {
			return "", &NameError{name, fmt.Sprintf("has a %d-byte element, over the %d-byte limit", len(elem), MaxElement)}
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

// A Plan is a validated set of file names: cleaned names in a fixed order,
// and every directory the files need, parents before children.
type Plan struct {
	Names []string // cleaned, sorted
	From  []string // From[i]: the name as given for Names[i]
	Dirs  []string // sorted, so parents come first
}

// PlanNames validates the file names given, not empty, before anything is
// written. It sorts given.
func PlanNames(given []string) (*Plan, error) {
	slices.Sort(given) // deterministic errors and write order

	p := &Plan{}
	seen := make(map[string]string, len(given)) // cleaned -> as given
	for _, name := range given {
		clean, err := CleanFile(name)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[clean]; dup {
			return nil, &NameError{name, fmt.Sprintf("is the same file as %q after cleaning", other)}
		}
		seen[clean] = name
		p.Names = append(p.Names, clean)
		p.From = append(p.From, name)
	}
	dirs := map[string]string{} // directory -> the first file (as given) in it
	for _, clean := range p.Names {
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
		p.Dirs = append(p.Dirs, d)
	}
	slices.Sort(p.Dirs)
	if err := checkCase(p, seen, dirs); err != nil {
		return nil, err
	}
	// Sort names too, keeping from aligned.
	idx := make([]int, len(p.Names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(p.Names[a], p.Names[b]) })
	names, from := make([]string, len(idx)), make([]string, len(idx))
	for i, j := range idx {
		names[i], from[i] = p.Names[j], p.From[j]
	}
	p.Names, p.From = names, from
	return p, nil
}

// checkCase refuses two paths of p, files or directories, that differ only
// by case: on a case-insensitive filesystem they are one entry. The error
// names both files as given, the later path in sorted order as the
// NameError's Name. files maps a cleaned file name to the name as given,
// dirs a directory to a file in it, as given.
//
// Two paths that FoldKey leaves as they are cannot collide, so only the
// others are looked up: a module of lower-case names costs no allocation.
func checkCase(p *Plan, files, dirs map[string]string) *NameError {
	type entry struct{ path, given string }
	var folded map[string]entry // the paths FoldKey changes, by key
	collide := func(a, b entry) *NameError {
		if a.path > b.path {
			a, b = b, a
		}
		return &NameError{b.given, fmt.Sprintf("%s: %s and %s", RuleCase, describe(a.path, a.given), describe(b.path, b.given))}
	}
	check := func(e entry) *NameError {
		key := FoldKey(e.path)
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
	for _, d := range p.Dirs {
		if err := check(entry{d, dirs[d]}); err != nil {
			return err
		}
	}
	for _, clean := range p.Names {
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
