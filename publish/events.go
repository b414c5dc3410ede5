package publish

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"
)

var (
	// ErrNotBooted is returned by Publish and Run of a [Publisher] whose
	// Boot has not succeeded: Root has not been emptied, so directories of
	// an earlier process could be taken for current ones.
	ErrNotBooted = errors.New("publish: publisher not booted (call Boot or Start first)")

	// ErrStale is wrapped by every [StaleError].
	ErrStale = errors.New("stale key")

	// ErrInvalidKey is wrapped by every [KeyError].
	ErrInvalidKey = errors.New("invalid key")
)

// A StaleError reports a Publish of a key older than the one held. Nothing
// was written, built or changed.
type StaleError[K cmp.Ordered] struct {
	Key     K // the key refused
	Current K // the key held
}

func (e *StaleError[K]) Error() string {
	return fmt.Sprintf("publish: key %v is older than the current key %v: %v", e.Key, e.Current, ErrStale)
}

// Unwrap returns [ErrStale].
func (e *StaleError[K]) Unwrap() error { return ErrStale }

// A KeyError reports a key whose directory name the key codec cannot give:
// NaN, which equals no key, or a key whose name the codec does not parse
// back to it. Nothing was written or changed. A name the layout refuses
// fails the write with the layout's error instead.
type KeyError[K cmp.Ordered] struct {
	Key  K
	Name string // the codec's name for Key
	Rule string // such as "the codec does not parse the name back to the key"
}

func (e *KeyError[K]) Error() string {
	return fmt.Sprintf("publish: key %v (directory %q): %s", e.Key, e.Name, e.Rule)
}

// Unwrap returns [ErrInvalidKey].
func (e *KeyError[K]) Unwrap() error { return ErrInvalidKey }

// Outcome says what a Publish did. The zero Outcome is no outcome: every
// [PublishEvent] carries one of the constants below.
type Outcome int

const (
	// Failed: an error other than a build's verdict or a stale key (a
	// refused argument, a write error, the context ending, also during the
	// build, a build error [Options.Refused] says is no verdict, not
	// booted). The current record and its directory are as they were.
	Failed Outcome = iota + 1

	// Published: a new key was written (or found on disk), built and set.
	Published

	// Unchanged: the current key again with identical files; nothing was
	// written or built, and the record carries the value given.
	Unchanged

	// Changed: the current key with other files: a directory of their own
	// was written beside the current one (or found on disk, when an
	// earlier content of theirs is still there), built, and swapped in.
	Changed

	// BuildFailed: the build step refused the directory's content, a
	// verdict the same files would meet again ([BuildFunc]); the current
	// record and its directory are as they were.
	BuildFailed

	// Stale: a key older than the current one was refused; nothing was
	// touched. An expected event, not a fault (a caller behind another):
	// it is logged at Info, in the words of the error Publish returns.
	Stale
)

// String returns the outcome as a lower-case word, such as "published".
func (o Outcome) String() string {
	switch o {
	case Failed:
		return "failed"
	case Published:
		return "published"
	case Unchanged:
		return "unchanged"
	case Changed:
		return "changed"
	case BuildFailed:
		return "build-failed"
	case Stale:
		return "stale"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Timings splits the time a Publish spent by step. A step that did not run
// takes zero.
type Timings struct {
	Write time.Duration // writing the directory
	Build time.Duration // the build step
	Set   time.Duration // setting the record
	Prune time.Duration // removing what is neither current nor leased
}

// A PublishEvent reports one Publish after its outcome is known.
type PublishEvent[K cmp.Ordered] struct {
	Key      K
	Identity Identity[K] // of the record set; zero when none was
	Dir      string      // the record's directory; "" when none was set
	Outcome  Outcome
	Timings  Timings
	Err      error // nil for Published, Unchanged and Changed

	// Discarded, under [Options.Adopt], is why the directories Boot kept
	// for this content that the Publish read failed verification, joined:
	// they were discarded, and the content taken from a kept copy that
	// verified or written afresh. Nil otherwise.
	Discarded error

	// Bytes is the size of the files of the directory the Publish wrote,
	// whatever became of it (a PublishFS writes the copy that an identical
	// re-publish, or a kept directory that verifies, makes it discard;
	// zero when nothing was written); Wrote is how
	// many of those bytes it passed to write(2), and Linked how many files
	// it hard-linked instead ([Options.LinkUnchanged]).
	Bytes, Wrote int64
	Linked       int
}

// A ReclaimEvent reports one attempt to remove a directory, by a Publish,
// by Forget, by Reclaim or by the reclaim loop, or a background removal
// that Settle or the reclaim loop found failed or stalled.
type ReclaimEvent[K cmp.Ordered] struct {
	// Identity and Dir are the content whose directory was removed; both
	// are zero for a failure that concerns no content's directory (listing
	// Root, or a leftover that would not go). For a removal found still
	// running past RemovalDeadline, Identity carries the key alone.
	Identity Identity[K]
	Dir      string

	// Delay runs from the instant the directory became reclaimable (its
	// record was replaced or forgotten, and its last lease released) to its
	// removal. A release is observed while Run runs; without Run, Delay
	// runs from the replacement.
	Delay time.Duration

	// Err is a failed removal, or one still running past RemovalDeadline
	// (errors.Is [dirlife.ErrRemovalStalled]); the reclaim loop retries it
	// with backoff.
	Err error
}

// Stats is a snapshot of a Publisher, for metrics.
type Stats[K cmp.Ordered] struct {
	Held         bool        // a record is held
	Current      Identity[K] // the held record's identity; zero when none
	Dirs         []DirStats[K]
	Publishes    uint64        // publishes that set a new content (Published or Changed)
	Changes      uint64        // of those, Changed
	Unchanged    uint64        // identical re-publishes
	FailedBuilds uint64        // publishes whose outcome was BuildFailed
	Reclaims     uint64        // directories removed
	ReclaimDelay time.Duration // the last removal's delay
	LastPublish  Timings       // of the last Publish that was not Unchanged
	LastError    error         // the last Publish or removal error; nil after a success, but a successful Publish keeps a removal failure the reclaim loop still retries

	// Under [Options.Adopt]: Kept is the number of directories Boot kept;
	// Adopted counts those a Publish verified and claimed without keeping
	// a copy of its own, Discarded those that failed verification.
	// NoDigestRecords reports that Root's filesystem refuses extended
	// attributes, so Boot kept nothing and emptied Root.
	Kept            int
	Adopted         uint64
	Discarded       uint64
	NoDigestRecords bool

	// BytesPublished and BytesWritten sum the Bytes and Wrote of every
	// PublishEvent; FilesLinked their Linked ([Options.LinkUnchanged]).
	BytesPublished, BytesWritten, FilesLinked uint64

	// StalledRemovals is the number of entries whose removal had run past
	// RemovalDeadline, and still ran, when Run last looked: each is out of
	// every directory's path, and its removal goes on. Zero once they are
	// over.
	StalledRemovals int64
}

// DirStats describes one directory a Publisher has on disk.
type DirStats[K cmp.Ordered] struct {
	Name     string // under Root
	Identity Identity[K]
	Leases   int  // outstanding leases on records of this directory
	Current  bool // the held record's directory
}
