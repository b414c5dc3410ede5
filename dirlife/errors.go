package dirlife

import (
	"errors"
	"fmt"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/removal"
)

var (
	// ErrInvalidName is wrapped by every [NameError].
	ErrInvalidName = names.ErrInvalidName

	// ErrNoCodec is returned by Write, IDs and Prune on a Layout whose
	// Codec is nil. Reset and Settle need no Codec.
	ErrNoCodec = errors.New("dirlife: the layout has no Codec")

	// ErrNoFiles is returned by Write for an empty [Files].
	ErrNoFiles = errors.New("no files to write")

	// ErrNotDurable is wrapped, with the sync's own error, by the error of
	// a Write whose directory is published, but whose sync of Root after
	// the publication failed: the directory is in place, complete, and
	// stays (a publication is never undone: another Write of the same ID
	// may have published since, and the state after a failed sync is
	// unknown anyway), but whether it survives power loss is unknown.
	// Write again to make it durable.
	ErrNotDurable = errors.New("published, durability unknown")

	// ErrMountPoint is wrapped by the error of a Prune or Reset that found
	// a directory under Root on another device than Root (a mount point),
	// which the error names: it is never removed or descended into, and
	// its ancestors under Root stay too.
	ErrMountPoint = removal.ErrMountPoint

	// ErrNotOwned is wrapped by the error of a Write, Prune or Reset
	// whose root is a non-empty directory that no layout ever claimed (it
	// has neither the layout's extended attribute nor its marker file).
	// Nothing in it is touched.
	ErrNotOwned = errors.New("root is not a dirlife layout root")

	// ErrUnsafeRoot is wrapped by the error of a Write, Prune, Reset or IDs
	// whose root is empty, the filesystem root, a symbolic link or not a
	// directory. Nothing is touched.
	ErrUnsafeRoot = errors.New("unsafe root")
)

// A NameError reports a name or an entry that the layout refuses, and the
// rule it breaks; nothing is published. The rules make a layout portable:
// what it writes on Linux, Windows and macOS (case-insensitive by default)
// holds as written. An ID's directory name, as its [Codec] formats it, and
// each element of a file's path must not
//
//   - contain a control character (0x00 to 0x1F) or one of : < > " \ | ? *;
//   - end with a dot or a space, which Windows drops;
//   - be a device name Windows reserves: CON, PRN, AUX, NUL, COM0 to COM9
//     and LPT0 to LPT9, in any case, alone or before an extension
//     ("nul.txt"), and COM and LPT with a superscript digit (COM¹, LPT³).
//
// Two paths of one directory that differ only by case ("README" and
// "readme", or the directories of "Pkg/a" and "pkg/b") are refused. An
// ID's name is one element of at most 255 bytes that does not start with
// a dot; a file's path is relative, clean of escapes, not a duplicate
// after cleaning, and at most 4,095 bytes.
//
// A staged entry, however it was made, is refused unless it is a regular
// file with no other hard link, a directory its owner can read, write and
// search (so that Prune can empty it), or a symbolic link that is relative
// and resolves, as the system follows it through other links, to an entry
// of the same directory. The setuid, setgid and sticky bits are refused,
// not dropped, but for the setgid bit that a setgid Root passes on to
// every directory made under it (a shared group directory, a volume
// mounted with an fsGroup): that one is Root's, and stays.
//
// Its Name and Rule fields say which name and which rule; its Error method
// returns "dirlife: name <name>: <rule>", and it wraps [ErrInvalidName].
type NameError = names.NameError

// A rootError reports a root that the layout refuses to write to or remove
// from: it wraps ErrUnsafeRoot or ErrNotOwned.
type rootError struct {
	Op   string // "write", "prune", "reset", "ids" or "settle"
	Root string // the root as given
	Rule string // why it is refused
	Err  error  // ErrUnsafeRoot or ErrNotOwned
}

// Error returns the operation, the root and the rule it breaks.
func (e *rootError) Error() string {
	return fmt.Sprintf("dirlife: %s %q: refusing root: %s", e.Op, e.Root, e.Rule)
}

// Unwrap returns e.Err.
func (e *rootError) Unwrap() error { return e.Err }

// A notDurableError reports a Write that published its directory but could
// not make the publication durable (see ErrNotDurable).
type notDurableError struct {
	Dir string // the published directory
	Err error  // the failed sync
}

// Error says that Dir is published and its durability unknown.
func (e *notDurableError) Error() string {
	return fmt.Sprintf("dirlife: write %s: published, but durability is unknown: %v", e.Dir, e.Err)
}

// Unwrap returns ErrNotDurable and the failed sync's error.
func (e *notDurableError) Unwrap() []error { return []error{ErrNotDurable, e.Err} }

// ErrRemovalStalled is wrapped by the [StalledError] of a call whose
// removals were still running when the removal deadline passed.
var ErrRemovalStalled = removal.ErrRemovalStalled

// A StalledError reports removals still running, or still waiting for
// one of the process's removal goroutines, when the call that waited for
// them reached [Layout.RemovalDeadline]. Each entry is already out of
// every ID's path, under an aside name of its own that no ID or staging
// directory can take; its removal goes on, and a failure of it is
// returned by the calls still waiting for it (a Prune or Reset that found
// it under way waits with a deadline of its own), or, when none is, by a
// later Prune or [Layout.Settle]. No second removal of it starts while
// this one runs.
//
// Its Root, Deadline and Entries fields say where, after how long and
// what; its Error method names them all, and it wraps [ErrRemovalStalled].
type StalledError = removal.StalledError

// A StalledEntry is one entry of Root whose removal is still running: Name
// is its name when it was set aside (an ID's directory such as "gen-4", a
// staging directory, a moved-aside copy), and Aside its name in Root now,
// where it is being removed.
type StalledEntry = removal.StalledEntry
