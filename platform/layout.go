package platform

import (
	"context"
	"fmt"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/platformmodule"
)

// Layout is the [dirlife.Layout] of the generated platform modules under
// Root: one directory per generation, named "gen-<n>" ([Layout.Dir]). What
// it adds to dirlife is that codec and the rule that generations start at
// 1 ([GenerationError]); every guarantee and limit is dirlife's. A Layout
// is a plain value, safe for concurrent use by multiple goroutines and
// processes. [Publisher] writes no directory twice and names its own
// directories (gen-<n>, or gen-<n>-<digest> for a later content of one
// generation), so Layout.Dir(g) is not where its current record lives:
// [Generated.Dir] is.
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

// Generations lists the generations whose directories are complete under
// Root, in ascending order: see [dirlife.Layout.IDs].
func (l Layout) Generations() ([]int64, error) { return l.dirs().IDs() }

// Write writes files as generation's module directory and returns its
// path: see [dirlife.Layout.Write]. A generation below 1 is refused with a
// [*GenerationError], and an empty file set with [ErrNoFiles], before
// anything is touched.
func (l Layout) Write(generation int64, files platformmodule.Files) (string, error) {
	if err := checkGeneration(generation); err != nil {
		return "", err
	}
	if len(files) == 0 {
		// dirlife's error would name the directory; this one names the
		// generation, like Publish's.
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

// Settle waits for the removals this process left running on Root (those a
// call stopped waiting for at its RemovalDeadline, and a [Publisher]'s,
// which it defers): see [dirlife.Layout.Settle].
func (l Layout) Settle() error { return l.dirs().Settle(context.Background()) }

// Reset empties Root, creating it when missing: the boot step (see
// [dirlife.Layout.Reset]).
func (l Layout) Reset() error { return l.dirs().Reset() }
