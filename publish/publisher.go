package publish

import (
	"cmp"
	"context"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/slot"
)

// A Record is what a Publisher sets: one content's key, digest, directory,
// the artifact its build step made from the directory, and the value the
// Publish carried.
type Record[K cmp.Ordered, A any, V comparable] struct {
	Key      K
	Digest   dirlife.Digest
	Dir      string // the directory the content lives in, under Root
	Artifact A
	Value    V
}

// Identity returns the record's key and digest.
func (r Record[K, A, V]) Identity() Identity[K] { return Identity[K]{Key: r.Key, Digest: r.Digest} }

// A BuildFunc makes the artifact of a written directory: it parses,
// compiles or validates what dir holds. It must not change dir. An error
// fails the Publish and leaves the current record as it was: with
// [BuildFailed] when it is a verdict on the content, with [Failed] when it
// is ctx's own (ctx ended during the build) or [Options.Refused] says it
// is not a verdict.
type BuildFunc[A any] func(ctx context.Context, dir string) (A, error)

// disk is where a Publisher writes and removes directories, by name under
// Root: a [dirlife.Layout] on Root with the Publisher's codec, which the
// tests wrap to inject faults (export_test.go).
type disk interface {
	Write(name string, files dirlife.Files) (string, error)
	CopyFS(ctx context.Context, name string, fsys fs.FS, opts dirlife.StreamOptions) (dirlife.Written, error)
	Prune(keep ...string) error
	Settle(ctx context.Context) error // waits for the removals Prune left to the background
}

// Options configures a [Publisher]. The zero value is a durable publisher
// with its own slot and no logging.
type Options[K cmp.Ordered, A any, V comparable] struct {
	// Slot is the slot the Publisher sets and readers lease from; nil: one
	// of the Publisher's own. Nothing else should write it.
	Slot *slot.Slot[K, Record[K, A, V]]

	Logger    *slog.Logger          // nil: no logging
	NoSync    bool                  // the layout's durability off, for disks wiped at boot
	OnPublish func(PublishEvent[K]) // optional; called once per Publish after its outcome is known, never under a lock
	OnReclaim func(ReclaimEvent[K]) // optional; called after each removal attempt, never under a lock

	// RetryMin is the reclaim loop's first wait after a failed removal
	// (zero: 100ms); each further failure doubles it, up to RetryMax
	// (zero: 30s).
	RetryMin, RetryMax time.Duration

	// RemovalDeadline is how long the reclaim loop waits for a directory's
	// removal before it reports it as stalled (zero:
	// [dirlife.DefaultRemovalDeadline]); the removal goes on, and the loop
	// retries the report with backoff until it is over.
	RemovalDeadline time.Duration

	// Check, when set, refuses a Publish before anything is touched: its
	// error is returned as the Publish's, with outcome Failed. For rules
	// of the caller's own on keys, files or values. A PublishFS calls it
	// with nil files, before it reads fsys: a rule on a streamed tree's
	// content is the build step's, which sees the written directory and
	// refuses it with BuildFailed.
	Check func(key K, files dirlife.Files, value V) error

	// Refused, when set, reports whether an error of the build step is a
	// verdict on the content, which the same files would meet again
	// (outcome BuildFailed), rather than a failure to finish the build
	// that a retry may not meet (Failed). Nil: every build error that is
	// not ctx's own is a verdict.
	Refused func(error) bool

	// MapError, when set, words each error of a Publish as the caller is
	// to get it: what Publish returns, OnPublish sees and the log says.
	// For a type built on the Publisher that speaks in terms of its own;
	// errors.As and errors.Is must still find what the error wraps.
	MapError func(error) error

	// Adopt makes Boot keep the directories an earlier process of this
	// Publisher's Root wrote, so that a restart serves unchanged content
	// without writing it again. Every directory records its digest as an
	// extended attribute, set before it is renamed into place, so a
	// partial directory carries none; Boot keeps the directories that carry
	// one, reading nothing else of them, removes everything else, and sets
	// no record.
	//
	// The attribute is trusted only to name the content a kept directory
	// claims to hold: no byte of a kept directory is served before this
	// process has read it again. The Publish whose key and digest a kept
	// directory claims verifies it (every name, mode, link target and
	// byte; no size, mtime or inode is trusted) and serves that very
	// directory, without writing, only on a match. Publish knows its
	// digest before it writes, and verifies first, comparing the directory
	// with its files ([dirlife.Layout.Verify] with files); PublishFS knows it
	// once its copy is staged, verifies then, hashing the directory
	// ([dirlife.Layout.Verify]), and on a match discards the copy unsynced,
	// keeping nothing of it. Several kept directories may claim one
	// content (a rewrite beside a leased copy of itself leaves two): they
	// are verified in name order until one matches, and the others go
	// unread with the next removal pass. Each that fails is discarded and
	// reported ([PublishEvent.Discarded], [Stats.Discarded]); when none
	// matches, the content is written afresh. Once verified, a directory is
	// trusted like one this process wrote, and not read again while it
	// stays on disk. Kept directories no Publish claims go, unread, with
	// the first record set or at Forget. Where Root's filesystem refuses
	// extended attributes, Boot keeps nothing and empties Root
	// ([Stats.NoDigestRecords]).
	//
	// The digest detects accidents (a torn write, a stray edit, a failing
	// disk), not tampering: whoever can write a directory can rewrite its
	// attribute. Setuid, setgid and sticky bits are outside the digest;
	// verification refuses them, as a write refuses them. A kept directory
	// is claimed only when the files' digest under the usual umask,
	// [dirlife.Layout.DigestFiles], is the one on disk: under another umask
	// it is written afresh.
	Adopt bool

	// LinkUnchanged hard-links, instead of writing, each file whose
	// content and mode equal those of a file in a directory the Publisher
	// has on disk and verified in this process (wrote, or claimed under
	// Adopt), hashing it first ([dirlife.Layout.Link]). A file on disk is
	// linked without reading it only while its inode, size, modification
	// time, change time and mode are those taken when the Publisher wrote
	// or verified its bytes, in a later tick of the filesystem's clock;
	// any other (one linked since, whose change time the link moved, or
	// one changed since, even with its modification time put back) is read
	// and compared byte for byte first ([dirlife.File]). A link that
	// fails or a file that differs falls back to writing; it needs Unix's
	// hard links, and elsewhere every publish under it fails. Every published file has its write bits
	// cleared, and the digest is of what is on disk, so the option changes
	// every Identity (Publish's files are 0o444 under the usual umask).
	// [PublishEvent] and [Stats] count the bytes written against the bytes
	// published. Without it, no inode is shared between directories.
	//
	// Removing a directory changes no other, and a leased one stays
	// byte-identical, as long as readers treat published files as
	// read-only: a chmod, write or truncation of a linked file changes
	// every directory that shares it (a rename or removal, only its own).
	LinkUnchanged bool

	wrapDisk func(disk) disk // tests only: wraps the Publisher's disk
}

const (
	defaultRetryMin = 100 * time.Millisecond
	defaultRetryMax = 30 * time.Second
)

// A Publisher publishes one immutable directory per content under Root and
// keeps the current one in a [slot.Slot], in the only safe order: Write,
// build, set (refusing a stale key), then remove every directory that is
// neither current nor leased. It is made by [New]; on the zero value,
// every method but Root and Booted panics.
//
// A Publisher is safe for concurrent use by multiple goroutines. Boot,
// Publish, Forget and every removal run one at a time. Leases take no lock
// of the Publisher's, and no Publish waits for one. Two Publishers must not
// share a Root.
type Publisher[K cmp.Ordered, A any, V comparable] struct {
	root      string
	codec     dirlife.Codec[K]
	layout    dirlife.Layout[string]
	links     *linkIndex // the layout's Link, under LinkUnchanged
	disk      disk
	build     BuildFunc[A]
	slot      *slot.Slot[K, Record[K, A, V]]
	log       *slog.Logger
	onPublish func(PublishEvent[K])
	onReclaim func(ReclaimEvent[K])
	check     func(K, dirlife.Files, V) error
	mapErr    func(error) error
	refused   func(error) bool
	retryMin  time.Duration
	retryMax  time.Duration
	adopt     bool
	seedA     maphash.Seed
	seedB     maphash.Seed

	booted  atomic.Bool
	running atomic.Int32 // reclaim loops running
	stalled atomic.Int64 // entries whose removal ran past the deadline at the last look

	// sem serialises Boot, Publish, Forget and removals; a channel so that
	// a wait for it honours a context.
	sem chan struct{}

	// Under sem.
	curFP   fingerprint // of the current record's files, when curDir is set
	curDir  string      // the directory curFP belongs to; "" when unknown
	dirty   bool        // Root may hold entries that are not known directories
	keeping bool        // Boot kept directories that stay until a record is set or Forget
	freedAt time.Time   // when the reclaim loop last saw a replaced record's last release

	mu   sync.Mutex            // guards dirs, for Stats; held only briefly
	dirs map[string]*dirRec[K] // the directories on disk, by name; written under sem

	poke chan struct{} // asks the reclaim loop for a pass; capacity 1

	statsMu    sync.Mutex
	stats      Stats[K] // the counters; the rest is read at Stats time
	reclaimErr error    // the removal failure not yet overcome by a retry
}

// dirRec is one directory the Publisher wrote.
type dirRec[K cmp.Ordered] struct {
	id         Identity[K]
	superseded time.Time // when its record stopped being current; zero while current or never set
	leased     bool      // seen leased while not current
	kept       bool      // kept by Boot under Adopt and not verified since
}

// New returns a Publisher that owns root, names a key's directories with
// codec (such as [dirlife.IntCodec] with Prefix "gen-") and makes each
// directory's artifact with build. It touches nothing on disk: call
// [Publisher.Boot] (or Start) before Publish. It panics if codec or build
// is nil.
func New[K cmp.Ordered, A any, V comparable](root string, codec dirlife.Codec[K], build BuildFunc[A], opts Options[K, A, V]) *Publisher[K, A, V] {
	if codec == nil {
		panic("publish: New with a nil codec")
	}
	if build == nil {
		panic("publish: New with a nil build step")
	}
	p := &Publisher[K, A, V]{
		root:      root,
		codec:     codec,
		build:     build,
		slot:      opts.Slot,
		log:       opts.Logger,
		onPublish: opts.OnPublish,
		onReclaim: opts.OnReclaim,
		check:     opts.Check,
		mapErr:    opts.MapError,
		refused:   opts.Refused,
		retryMin:  opts.RetryMin,
		retryMax:  opts.RetryMax,
		adopt:     opts.Adopt,
		seedA:     maphash.MakeSeed(),
		seedB:     maphash.MakeSeed(),
		sem:       make(chan struct{}, 1),
		dirs:      make(map[string]*dirRec[K]),
		poke:      make(chan struct{}, 1),
	}
	// Removal is deferred: the serialised step only takes directories out
	// of their paths, and Run waits for their removal off it.
	p.layout = dirlife.Layout[string]{Root: root, Codec: dirCodec[K]{key: codec}, NoSync: opts.NoSync,
		DeferRemoval: true, RemovalDeadline: opts.RemovalDeadline, RecordDigest: opts.Adopt}
	if opts.LinkUnchanged {
		p.links = new(linkIndex)
		p.layout.Link = p.links
	}
	p.disk = p.layout
	if opts.wrapDisk != nil {
		p.disk = opts.wrapDisk(p.layout)
	}
	if p.slot == nil {
		p.slot = new(slot.Slot[K, Record[K, A, V]])
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.retryMin <= 0 {
		p.retryMin = defaultRetryMin
	}
	if p.retryMax <= 0 {
		p.retryMax = defaultRetryMax
	}
	p.retryMax = max(p.retryMax, p.retryMin)
	return p
}

// made panics if p was not made by New.
func (p *Publisher[K, A, V]) made() {
	if p.sem == nil {
		panic("publish: Publisher used without New")
	}
}

// lock takes the serialisation, or returns ctx.Err() if ctx ends first.
func (p *Publisher[K, A, V]) lock(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Publisher[K, A, V]) unlock() { <-p.sem }

// Root returns the directory the Publisher owns.
func (p *Publisher[K, A, V]) Root() string { return p.root }

// Slot returns the slot readers use, the one way in: [slot.Slot.Lease]
// leases the current record (reading it and leasing it are one atomic
// step, and its directory stays on disk, unchanged, until the lease is
// released), Wait waits for one, and Get reads it without a lease. Writing
// the slot (Set, Clear) bypasses the Publisher's order; use Publish and
// Forget.
func (p *Publisher[K, A, V]) Slot() *slot.Slot[K, Record[K, A, V]] {
	p.made()
	return p.slot
}

// Boot empties Root and makes sure it exists: the boot step, before any
// reader exists. Under [Options.Adopt] it keeps the directories that carry
// a recorded digest, for a Publish to claim, and sets no record. Until
// Boot succeeds, Publish and Run return [ErrNotBooted]. Boot is idempotent: once it has succeeded, later calls
// return nil at once, so a Root with leased directories is never emptied.
// It waits for a running Forget, and for the removal of what it empties
// (up to RemovalDeadline: past it, a [*dirlife.StalledError]). A failed
// Boot leaves the Publisher unbooted, and Root emptied as far as it got;
// call it again.
func (p *Publisher[K, A, V]) Boot() error {
	p.made()
	if p.booted.Load() {
		return nil
	}
	_ = p.lock(context.Background())
	defer p.unlock()
	if p.booted.Load() {
		return nil
	}
	kept, recorded, err := p.bootRoot()
	if err != nil {
		p.log.Error("publish: boot failed", "root", p.root, "err", err)
		return err
	}
	codec := dirCodec[K]{key: p.codec}
	p.mu.Lock()
	clear(p.dirs)
	for name, dg := range kept {
		if k, ok := codec.keyOf(name); ok {
			p.dirs[name] = &dirRec[K]{id: Identity[K]{Key: k, Digest: dg}, kept: true}
		}
	}
	p.mu.Unlock()
	p.keeping = len(kept) > 0
	p.statsMu.Lock()
	p.stats.Kept = len(kept)
	p.stats.NoDigestRecords = p.adopt && !recorded
	p.statsMu.Unlock()
	p.booted.Store(true)
	if p.adopt {
		p.log.Info("publish: booted", "root", p.root, "kept", len(kept), "digests recorded", recorded)
	} else {
		p.log.Info("publish: booted", "root", p.root)
	}
	return nil
}

// bootRoot empties Root but, under Adopt, for the directories that carry
// a recorded digest, which it keeps and returns, with whether Root's
// filesystem records digests. It reads every record before it removes
// anything, and keeps nothing where Root's filesystem records none.
func (p *Publisher[K, A, V]) bootRoot() (kept map[string]dirlife.Digest, recorded bool, err error) {
	if p.adopt {
		if kept, recorded, err = p.layout.Recorded(); err != nil {
			return nil, false, err
		}
	}
	if len(kept) == 0 {
		return kept, recorded, p.layout.Reset()
	}
	l := p.layout
	l.DeferRemoval = false // Boot waits for what it removes, as Reset does
	return kept, recorded, l.Prune(slices.Collect(maps.Keys(kept))...)
}

// Booted reports whether Boot has succeeded.
func (p *Publisher[K, A, V]) Booted() bool { return p.booted.Load() }

// Start boots the Publisher and runs its reclaim loop until ctx ends: it
// satisfies controller-runtime's manager.Runnable. It returns Boot's
// error, or nil when ctx ends.
func (p *Publisher[K, A, V]) Start(ctx context.Context) error {
	if err := p.Boot(); err != nil {
		return err
	}
	return p.Run(ctx)
}

// Stats returns a snapshot of the Publisher for metrics. It takes no lock
// that a Publish holds while it writes or builds.
func (p *Publisher[K, A, V]) Stats() Stats[K] {
	p.made()
	p.statsMu.Lock()
	s := p.stats
	p.statsMu.Unlock()
	s.StalledRemovals = p.stalled.Load()
	_, cur, held := p.slot.Get()
	if held {
		s.Held, s.Current = true, cur.Identity()
	}
	leases := map[string]int{}
	for _, lv := range p.slot.LeasedValues() {
		leases[filepath.Base(lv.Value.Dir)] += lv.Leases
	}
	p.mu.Lock()
	s.Dirs = make([]DirStats[K], 0, len(p.dirs))
	for name, d := range p.dirs {
		s.Dirs = append(s.Dirs, DirStats[K]{Name: name, Identity: d.id, Leases: leases[name], Current: held && cur.Dir == p.layout.Dir(name)})
	}
	p.mu.Unlock()
	slices.SortFunc(s.Dirs, func(a, b DirStats[K]) int {
		if c := cmp.Compare(a.Identity.Key, b.Identity.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return s
}
