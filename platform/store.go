package platform

import (
	"fmt"

	"leasekit.dev/lease"
	"leasekit.dev/slot"
)

// Store holds at most one generated platform, keyed on the Platform
// resource's .metadata.generation it was built for: one global Platform per
// cluster needs one slot, not a content-hash cache.
//
// The zero value holds nothing and is ready to use. A Store must not be
// copied after first use. Store is safe for concurrent use by multiple
// goroutines. Leasing the current record, and releasing it while it is
// current, take no lock; a Lease that races SetGenerated or Clear, and
// the last release of a replaced record, take the store's lock briefly.
//
// A [Publisher]'s Store is the very slot its generic publisher sets and
// leases from, so a lease taken here holds the Publisher's directory.
//
// The Store carries no kernel gate: the [kernel.Kernel] is safe for
// concurrent use across its calls, so renders of different objects overlap
// with no mutex.
type Store struct {
	slot slot.Slot[int64, record] // a Publisher's very slot
}

// NewStore returns an empty Store, as ready as the zero value.
func NewStore() *Store { return &Store{} }

// SetGenerated records g as the current generated platform module,
// replacing any earlier record, and reports g.Generation from Generation.
// Leases on the replaced generation are unaffected: the render holding one
// finishes against the directory it started with.
//
// Generations start at 1 and [Store.Generation] reports 0 for "nothing
// held", so SetGenerated panics if g.Generation is below 1: such a record
// could not be told from an empty store.
func (s *Store) SetGenerated(g Generated) {
	if g.Generation < 1 {
		panic(fmt.Sprintf("platform: SetGenerated with generation %d: generations start at 1", g.Generation))
	}
	s.slot.Set(g.Generation, recordOf(g))
}

// Generated returns the current generated-module record and true, or the
// zero record and false when none is held. Safe for concurrent callers. A
// render that will read the module directory takes Lease instead.
func (s *Store) Generated() (Generated, bool) {
	_, r, ok := s.slot.Get()
	if !ok {
		return Generated{}, false
	}
	return generatedOf(r), true
}

// Generation returns the .metadata.generation the held platform was built
// for, or 0 when no platform is held.
func (s *Store) Generation() int64 {
	k, _, _ := s.slot.Get()
	return k
}

// Lease returns the current record and a release function, holding the
// record's generation leased until release is called; it returns ok false
// (a zero record and a no-op release) when no platform is held. The caller
// defers release immediately: a leased generation's module directory
// survives every prune until every lease on it is released.
//
// Reading the record and leasing its generation are one atomic step: the
// generation is in every [Store.Leased] that begins after Lease returns,
// until release is called, whatever SetGenerated or Clear runs meanwhile.
// Release is idempotent and may be called from any goroutine; calling it
// twice never releases another lease.
func (s *Store) Lease() (Generated, func(), bool) {
	l, ok := s.slot.Lease()
	if !ok {
		return Generated{}, noRelease, false
	}
	return generatedOf(l.Value()), l.Release, true
}

func noRelease() {}

// Leased returns the generations at least one render currently holds a
// lease on, in ascending order, whether or not they are still held. The
// publisher adds them to the prune keep set.
func (s *Store) Leased() []int64 { return s.slot.Leased() }

// Clear drops the held record so the store reports no platform held.
// Called when the Platform resource is deleted. Leases outstanding on the
// dropped generation are kept: the renders holding them still read its
// directory.
func (s *Store) Clear() { s.slot.Clear() }

// ReportLeaks installs hook as the leak reporter of s; a nil hook turns
// reporting off, as it is by default, when it costs nothing. A lease taken
// while a hook is installed whose release function becomes unreachable
// before it was called is reported with its generation and the time it was
// taken. The leaked lease is not released: its generation's directory
// stays on disk, because only the holder knows whether it still reads it.
// The hook runs on a goroutine of the runtime's, never under a lock of the
// store's; it should return quickly.
func (s *Store) ReportLeaks(hook func(lease.Leak[int64])) { s.slot.ReportLeaks(hook) }
