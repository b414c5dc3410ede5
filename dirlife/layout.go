package dirlife

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
)

// Files maps slash-separated relative paths to file contents: the files of
// one ID's directory. Directories are implied by the paths.
type Files map[string][]byte

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
	markerName  = ".dirlife-root"
	lockName    = sys.LockFile
	stagePrefix = ".stage-"
	asidePrefix = names.AsidePrefix
	markerTemp  = ".marker-"
	linkPrefix  = ".link-" // a link in the staging tree, before it replaces a written file
	markerText  = "This directory is managed by leasekit.dev/dirlife: Prune and Reset remove everything in it.\n"
)

// checkMode refuses a mode the layout does not publish (see
// [names.CheckMode]).
func checkMode(name string, mode fs.FileMode) *NameError { return names.CheckMode(name, mode) }

// attrUnsupported reports whether err says Root's filesystem holds no
// extended attributes (see [sys.AttrUnsupported]).
func attrUnsupported(err error) bool { return sys.AttrUnsupported(err) }

// A Layout keeps one directory per ID under Root, which it owns
// exclusively: nothing but the layout should create or remove entries in
// Root. The zero value of every option field is the safe default.
//
// A Layout is a plain value; copies of it, in one process or several, that
// share a Root coordinate through a lock on Root. Its methods are safe for
// concurrent use by multiple goroutines.
//
// How a rewrite, the lock and a durable write differ between systems is
// in the package documentation's limits.
type Layout[ID cmp.Ordered] struct {
	// Root is the directory the layout owns. Write and Reset create it,
	// with its parents, when it is missing.
	Root string

	// Codec names each ID's directory.
	Codec Codec[ID]

	// NoSync turns durability off: Write no longer syncs files and
	// directories, so a directory may be lost or incomplete after power
	// loss (never after a process crash). For roots on disks that are
	// wiped at boot anyway.
	NoSync bool

	// PerFileSync makes a durable Write fsync each of its files, several
	// at once, and then each of its directories, instead of calling
	// syncfs(2) once for the filesystem that holds Root. syncfs costs
	// about one journal commit, but it also flushes whatever else is dirty
	// on that filesystem: set PerFileSync when Root shares a filesystem
	// with heavy writers. Systems without syncfs (all but Linux) always
	// sync per file.
	PerFileSync bool

	// DeferRemoval makes Prune and a replacing Write return once what they
	// remove is out of every ID's path, leaving its removal to run in the
	// background, where a failure is reported by the next Prune or
	// [Layout.Settle]; Settle waits for it. Off, the zero value, they
	// return once the space is free. For callers that must not wait for
	// a removal (a publisher's serialised step).
	DeferRemoval bool

	// RecordDigest makes every write record its directory's [Digest] as an
	// extended attribute on the directory, set before the directory is made
	// durable and renamed into place, so that a directory a write never
	// finished carries none; [Layout.Recorded] lists the directories that
	// carry one. Where Root's filesystem refuses extended attributes,
	// writes record nothing. The digest detects accidents (a torn write, a
	// stray edit, a failing disk), not tampering: whoever can change a
	// directory can change its attribute too.
	RecordDigest bool

	// Link, when set, makes every write clear its files' write bits
	// (Write's are 0o444 under the usual umask, so the Digest differs),
	// and Write and CopyFS hard-link, instead of writing, a file whose
	// content and permission bits equal those of the source Link offers,
	// a file of a directory the layout published or verified ([Linker]).
	// Write hashes each file first; CopyFS hashes a file of up to 1 MiB in
	// memory first, and a larger one as it writes it, replacing it then by
	// a link (disk shared, bytes written). A source is linked without
	// reading it only while its inode, size, modification time, change
	// time and permission bits are those the layout took when it knew its
	// bytes; any other (one linked before, whose change time the link
	// moved; one changed since) is read and compared byte for byte with
	// the new file first ([File] says exactly when). A link that fails
	// (EMLINK, EXDEV, a source whose bytes differ) falls back to writing.
	// Where the system has no hard links (not Unix), a write under Link
	// fails.
	//
	// A linked file is one inode in several directories: a chmod, write
	// or truncation in one changes them all, a rename or removal only its
	// own. Readers must treat published files as read-only.
	Link Linker

	// RemovalDeadline bounds how long a call waits for a removal (zero:
	// [DefaultRemovalDeadline]). Past it, the call returns a
	// [*StalledError] naming what is left, and the removal goes on.
	RemovalDeadline time.Duration

	faults   faultFunc                // test seam; nil in production
	devices  func(fs.FileInfo) uint64 // test seam for deviceOf; nil in production
	removing func(was string)         // test seam: called before each garbage entry is removed; nil in production
}

// Dir returns the directory of id under Root, whether or not it exists. It
// panics if Codec is nil.
func (l Layout[ID]) Dir(id ID) string {
	if l.Codec == nil {
		panic(errDirNoCodec)
	}
	return filepath.Join(l.Root, l.Codec.Format(id))
}

// errDirNoCodec is the panic value of Dir on a Layout with no Codec.
const errDirNoCodec = "dirlife: Layout.Dir: the layout has no Codec; set Layout.Codec (such as IntCodec) to name ID directories"

// name returns the directory name of id, checked.
func (l Layout[ID]) name(id ID) (string, error) {
	if l.Codec == nil {
		return "", ErrNoCodec
	}
	name := l.Codec.Format(id)
	if err := names.CheckElement(name); err != nil {
		return "", err
	}
	return name, nil
}

// IDs returns the IDs whose directories exist complete under Root, in
// ascending order of ID (not of name: gen-9 before gen-10). Names the codec
// does not parse, entries that are not directories (a symbolic link
// included), and the layout's own staging and moved-aside entries are
// ignored. A missing Root holds no IDs and is not an error; a Root that
// Write refuses as unsafe (a symbolic link, a file, a filesystem root) is
// refused here too ([ErrUnsafeRoot]).
func (l Layout[ID]) IDs() ([]ID, error) {
	if l.Codec == nil {
		return nil, ErrNoCodec
	}
	if exists, err := checkRoot("ids", l.Root); err != nil || !exists {
		return nil, err
	}
	d, err := os.Open(l.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := d.ReadDir(-1) // unsorted: IDs are sorted below
	d.Close()
	if err != nil {
		return nil, err
	}
	var ids []ID
	for _, e := range entries {
		if id, ok := l.parse(e); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// parse returns the ID e is the directory of, if it is one.
func (l Layout[ID]) parse(e fs.DirEntry) (ID, bool) {
	if !e.IsDir() || names.CheckElement(e.Name()) != nil {
		var zero ID
		return zero, false
	}
	return l.Codec.Parse(e.Name())
}
