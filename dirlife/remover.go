package dirlife

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/sys"
)

// DefaultRemovalDeadline is the removal deadline of a Layout whose
// RemovalDeadline is zero.
const DefaultRemovalDeadline = 30 * time.Second

// removeGarbage starts the removal of the garbage entries of h's root,
// which the caller set aside under the root's lock and still holds (see
// [removal.Removals.Start]), with a handle of the root of their own, so the
// caller may release h at once. Unless deferred, the caller is counted as
// their waiter, and must then wait for them with wait.
func (l Layout[ID]) removeGarbage(st *rootlock.State, h *openRoot, entries []removal.Garbage, deferred bool) ([]*removal.Removal, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, fmt.Errorf("dirlife: remove garbage in %s: %w", l.Root, err)
	}
	r, err := h.r.OpenRoot(".")
	if err != nil {
		return nil, fmt.Errorf("dirlife: remove garbage in %s: %w", l.Root, err)
	}
	st.Retain() // the caller holds a reference: st is still registered
	b := removal.Batch{Root: l.Root, R: r, Dev: dev, DevOf: l.devOf(), Hook: l.removing, Fault: l.faults,
		Done: func() { rootlock.Put(st) }}
	return st.Removals.Start(b, entries, deferred), nil
}

// deadline returns the removal deadline in force.
func (l Layout[ID]) deadline() time.Duration {
	if l.RemovalDeadline > 0 {
		return l.RemovalDeadline
	}
	return DefaultRemovalDeadline
}

// wait waits for the removals in batch up to the removal deadline, or
// until ctx ends (see [removal.Removals.Wait]).
func (l Layout[ID]) wait(ctx context.Context, st *rootlock.State, batch []*removal.Removal, c removal.Collect) error {
	return st.Removals.Wait(ctx, batch, c, l.Root, l.deadline())
}

// rootDevice returns the device of h's root, as devOf reports it.
func rootDevice(h *openRoot, devOf func(fs.FileInfo) uint64) (uint64, error) {
	fi, err := h.dir.Stat()
	if err != nil {
		return 0, err
	}
	return devOf(fi), nil
}

// Settle waits until the removals that this process's calls on Root left
// running are over (those of [Layout.DeferRemoval], and those a call
// stopped waiting for at its deadline), or until ctx is done, returning
// ctx's error; the removals go on. It returns their failures not reported
// yet while what they left is still in Root, and a [*StalledError] naming
// those still running past the removal deadline. Afterwards every entry
// this process set aside before Settle began is gone, named by the error,
// or left by a failure returned already (by an earlier report, or to a
// call that waited for it); the next Prune removes it, unless its cause
// (a mount) stays. Another process's removals and leftovers are not
// waited for. A missing Root is not an error.
func (l Layout[ID]) Settle(ctx context.Context) error {
	// The failures of at most 16 roots that no call uses any more are
	// kept, the oldest forgotten first; what their removals left is
	// removed all the same by the next Prune.
	if exists, err := checkRoot("settle", l.Root); err != nil || !exists {
		return err
	}
	r, err := os.OpenRoot(l.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	defer r.Close()
	dir, err := r.Open(".")
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	key, err := sys.KeyOf(dir)
	dir.Close()
	if err != nil {
		return fmt.Errorf("dirlife: settle: %w", err)
	}
	st := rootlock.Lookup(key)
	if st == nil {
		return nil
	}
	defer rootlock.Put(st)
	err = l.wait(ctx, st, st.Removals.Pending(), removal.CollectNone)
	return errors.Join(err, st.Removals.TakeErr(r))
}
