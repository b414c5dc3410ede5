package platform

import (
	"fmt"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/platformmodule"
)

// Layout owns the on-disk lifecycle of generated platform modules under
// Root: one directory per generation ("gen-<n>", see [Layout.Dir]),
// written by staging plus rename so a module directory is either absent or
// complete, pruned to the current and every leased generation after each
// successful build, and emptied at start. The module content itself comes
// from [platformmodule.Generate]; the lifecycle is process policy, which is
// why it lives here beside the store that records the directories.
//
// Layout is a [dirlife.Layout] with the gen-<n> codec and inherits its
// guarantees: atomic publication and replacement, durability (unless
// NoSync), confinement to Root, and an ownership guard that makes Write,
// Prune and Reset refuse a Root the layout never claimed. A Layout is a
// plain value; its methods are safe for concurrent use by multiple
// goroutines and processes.
//
// A lease protects a directory from Prune, not from a rewrite of the same
// generation: Write replaces an existing directory. [Publisher] writes no
// directory twice, and names its directories itself (gen-<n>, or
// gen-<n>-<digest> for a later content of one generation), so that
// Layout.Dir(g) is not where its current record lives: [Generated.Dir] is.
type Layout struct {
	// Root is the directory the layout owns.
	Root string

	// NoSync turns durability off, for disks that are wiped at boot: see
	// [dirlife.Layout.NoSync].
	NoSync bool

	// RemovalDeadline bounds how long Prune, Write and Reset wait for a
	// removal (zero: [dirlife.DefaultRemovalDeadline]): see
	// [dirlife.Layout.RemovalDeadline].
	RemovalDeadline time.Duration

	deferRemoval bool // the Publisher's: see dirlife.Layout.DeferRemoval
}

// genCodec names a generation's directory gen-<n>.
var genCodec dirlife.Codec[int64] = dirlife.IntCodec[int64]{Prefix: "gen-"}

// dirs returns the generic layout l is.
func (l Layout) dirs() dirlife.Layout[int64] {
	return dirlife.Layout[int64]{
		Root: l.Root, Codec: genCodec, NoSync: l.NoSync,
		DeferRemoval: l.deferRemoval, RemovalDeadline: l.RemovalDeadline,
	}
}

// Dir returns the directory a generation's module lives in, whether or not
// it exists: filepath.Join(Root, "gen-<generation>").
func (l Layout) Dir(generation int64) string { return l.dirs().Dir(generation) }

// Generations lists the complete generation directories under Root, in
// ascending generation order. Staging and moved-aside entries are ignored.
// A missing Root lists nothing.
func (l Layout) Generations() ([]int64, error) { return l.dirs().IDs() }

// Write materialises files as generation's module directory and returns its
// path. The files are written into a staging directory first and renamed
// into place, so no reader observes a partially written module: a failure
// at any point leaves the staging directory (cleaned by the next Prune or
// Reset) and never a generation directory. An existing directory for the
// same generation is replaced atomically, and removed before Write
// returns. See [dirlife.Layout.Write].
//
// Write refuses a generation below 1 ([GenerationError]) and an empty file
// set ([ErrNoFiles]) before anything is created.
func (l Layout) Write(generation int64, files platformmodule.Files) (string, error) {
	if err := checkGeneration(generation); err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("platform: write generation %d: %w", generation, ErrNoFiles)
	}
	return l.dirs().Write(generation, files)
}

// Prune removes every entry under Root except the generation directories
// listed in keep: superseded generations, staging leftovers and moved-aside
// copies. A missing Root is not an error. When Prune returns, Root holds
// only the kept generations' directories, and the space of the rest is
// free, but for an entry that another call of this process on Root was
// removing (a concurrent Prune or rewrite, a [Publisher]'s deferred
// removal): Prune leaves it to that call, and Settle waits for it. See
// [dirlife.Layout.Prune].
func (l Layout) Prune(keep ...int64) error { return l.dirs().Prune(keep...) }

// Settle waits until the removals that this process left running on Root
// are over (those a call stopped waiting for at its RemovalDeadline, and
// a [Publisher]'s, which it defers), and returns their failures not yet
// reported; it returns at once when there are none. See
// [dirlife.Layout.Settle] for what holds afterwards. A missing Root is not
// an error.
func (l Layout) Settle() error { return l.dirs().Settle() }

// Reset empties Root entirely (the boot path: disk is ephemeral, the
// resource is the source of truth, and the initial reconcile regenerates)
// and makes sure Root exists afterwards. When it returns, Root is empty
// and the space free. See [dirlife.Layout.Reset].
func (l Layout) Reset() error { return l.dirs().Reset() }
