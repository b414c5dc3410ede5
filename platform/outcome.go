package platform

import (
	"strconv"
	"time"

	"leasekit.dev/platform/kernel/isolate"
	"leasekit.dev/publish"
)

// Outcome says what a Publish did. The zero Outcome is no outcome: every
// [PublishEvent] carries one of the constants below.
type Outcome int

const (
	// Failed: an error other than a failed build or a stale generation.
	// A generation below 1 ([*GenerationError]), an empty file set
	// ([ErrNoFiles]), a skew policy other than Warn or Refuse
	// ([*SkewPolicyError]), a file name the layout refuses (a
	// [*dirlife.NameError]) and a Publisher not booted ([ErrNotBooted]) are
	// refused before anything is touched. A context that ends while the
	// call waits for its turn touches nothing. A build the evaluator did
	// not finish (ctx ended during it, or an [*isolate.Workers] worker was
	// killed past a budget or lost) and a failed Write, also one that
	// published but could not sync ([dirlife.ErrNotDurable]), leave at most
	// their own new directory, which the removal pass that follows, in the
	// same call, clears (a removal that fails is retried); a retry
	// publishes again. No directory is ever written over: the current
	// record and its directory are as they were.
	Failed Outcome = iota + 1

	// Published: a new generation was written (or found on disk), built
	// and set.
	Published

	// Unchanged: the current generation again with byte-identical files
	// (recognised by a keyed fingerprint of the files, or else by their
	// digest, not by a kept copy or by disk); nothing was written or
	// built, and the current record comes back with the skew policy as
	// given.
	Unchanged

	// Rewritten: the current generation with changed files: a new
	// identity at the current generation, written into a directory of its
	// own beside the current one (or found on disk, when an earlier
	// content of theirs is still there), built and swapped in. Renders
	// holding the old record keep its directory until they release it.
	Rewritten

	// BuildFailed: the kernel refused the module's content
	// ([kernel.IsRefusal]): publishing the same files again fails again.
	// The current record and its directory are as they were.
	BuildFailed

	// Stale: a generation older than the current one was refused with a
	// [*StaleError]; nothing was touched. An expected event, not a fault
	// (a reconcile behind another): it is logged at Info, in the words of
	// the StaleError.
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
	case Rewritten:
		return "rewritten"
	case BuildFailed:
		return "build-failed"
	case Stale:
		return "stale"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// PublishTimings splits the time a Publish spent by step. A step that did
// not run takes zero.
type PublishTimings struct {
	Write time.Duration // writing the directory
	Build time.Duration // kernel.BuildPlatform
	Set   time.Duration // Store.SetGenerated
	Prune time.Duration // pruning to the current and leased generations
}

// A PublishEvent reports one Publish after its outcome is known.
type PublishEvent struct {
	Generation int64
	Identity   publish.Identity[int64] // of the record set; zero when none was
	Dir        string                  // the record's directory; "" when none was set
	Outcome    Outcome
	Timings    PublishTimings
	Err        error // nil for Published, Unchanged and Rewritten
}

// A ReclaimEvent reports one attempt to remove a generation's directory,
// by a Publish's prune, by Forget or by the reclaim loop, or a background
// removal that the reclaim loop found failed or stalled.
type ReclaimEvent struct {
	// Generation is the generation whose directory was removed; 0 for a
	// failure that concerns no generation directory (listing Root, or a
	// staging leftover that would not go).
	Generation int64

	// Identity and Dir are the content whose directory was removed (zero
	// for a failure that concerns no generation directory): a generation
	// may have had several. For a removal found still running past
	// RemovalDeadline, Identity carries the generation alone.
	Identity publish.Identity[int64]
	Dir      string

	// Delay runs from the instant the generation became reclaimable (it
	// was superseded or forgotten, and its last lease was released) to its
	// removal. The instant of a release is observed while Run runs;
	// without Run, Delay runs from the supersession.
	Delay time.Duration

	// Err is a failed removal, or one still running past RemovalDeadline
	// (errors.Is [leasekit.dev/dirlife.ErrRemovalStalled]); the reclaim loop retries it
	// with backoff.
	Err error
}

// Stats is a snapshot of a Publisher, for metrics.
type Stats struct {
	Generation   int64                     // current; 0 when none
	OnDisk       []int64                   // generations with a directory on disk, ascending
	Dirs         []publish.DirStats[int64] // the directories on disk, with identity and lease count
	Leased       []int64                   // leased generations, ascending
	Leases       map[int64]int             // outstanding leases per generation
	Publishes    uint64                    // publishes that set a new module (Published or Rewritten)
	Rewrites     uint64                    // of those, Rewritten
	Unchanged    uint64                    // identical re-publishes
	FailedBuilds uint64
	Prunes       uint64        // generation directories removed, by Publish's prune or by reclaim
	ReclaimDelay time.Duration // the last reclaim's delay
	LastPublish  PublishTimings
	LastError    error // the last Publish or reclaim error; nil after a success, but a successful Publish keeps a removal failure the reclaim loop still retries

	// StalledRemovals is the number of entries (a generation's directory,
	// a staging leftover) whose removal had run past RemovalDeadline, and
	// still ran, when Run last looked: each is out of every generation's
	// path, and its removal goes on. Zero once they are over.
	StalledRemovals int64

	Memo      MemoStats      // the render memo
	Admission AdmissionStats // the admission of renders that evaluate

	// Workers describes the worker processes of the Publisher's
	// Evaluator when it is an [*isolate.Workers] (renders killed past a
	// budget, restarts, pool size); the zero value when it evaluates
	// in-process.
	Workers isolate.Stats
}
