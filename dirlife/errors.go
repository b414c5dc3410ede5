package dirlife

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidName is wrapped by every [NameError].
	ErrInvalidName = errors.New("invalid name")

	// ErrNoCodec is returned by Write, IDs and Prune on a Layout whose
	// Codec is nil.
	ErrNoCodec = errors.New("dirlife: the layout has no Codec")

	// ErrNoFiles is returned by Write for an empty [Files].
	ErrNoFiles = errors.New("no files to write")

	// ErrNotOwned is wrapped by the [RootError] of a Write, Prune or Reset
	// whose root is a non-empty directory that the layout did not create
	// (it lacks the layout's marker file). Nothing in it is touched.
	ErrNotOwned = errors.New("root is not a dirlife layout root")

	// ErrUnsafeRoot is wrapped by the [RootError] of a Write, Prune or Reset
	// whose root is empty, the filesystem root, a symbolic link or not a
	// directory. Nothing is touched.
	ErrUnsafeRoot = errors.New("unsafe root")
)

// A NameError reports a file name or ID that the layout refuses, and the
// rule it breaks (see the package documentation's Names): unsafe (empty,
// absolute, escaping, over-long, a duplicate), unportable (a character or
// device name Windows refuses, a trailing dot or space) or colliding with
// another name of the same Files by case. Nothing has been written when a
// NameError is returned.
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

// A RootError reports a root that the layout refuses to write to or remove
// from.
type RootError struct {
	Op   string // "write", "prune" or "reset"
	Root string // the root as given
	Rule string // why it is refused
	Err  error  // ErrUnsafeRoot or ErrNotOwned
}

// Error returns the operation, the root and the rule it breaks.
func (e *RootError) Error() string {
	return fmt.Sprintf("dirlife: %s %q: refusing root: %s", e.Op, e.Root, e.Rule)
}

// Unwrap returns e.Err.
func (e *RootError) Unwrap() error { return e.Err }
