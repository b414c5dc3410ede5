package slot

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"leasekit.dev/lease"
)

// A Slot holds at most one value of type V, keyed on K.
//
// The zero value for a Slot holds nothing and is ready to use. A Slot must
// not be copied after first use.
//
// Slot is safe for concurrent use by multiple goroutines. A Set synchronizes
// before every Get and Lease that observes its value.
type Slot[K cmp.Ordered, V any] struct {
	cur atomic.Pointer[held[K, V]] // nil when nothing is held

	mu      sync.Mutex               // serialises Set, SetIfNewer, Clear, Leased and the end of a retired key's last lease
	retired lease.Counter[K]         // one lease per replaced value that still had leases
	old     map[*held[K, V]]struct{} // replaced values whose leases are outstanding
	changed chan struct{}            // closed and replaced by every store; nil until a waiter asks
	freed   chan struct{}            // closed and replaced when a replaced value's last lease is released; nil until asked

	leakFn atomic.Pointer[func(lease.Leak[K])] // nil: leak reporting off
}

// retiredBit marks a held value that has been replaced or cleared: its
// remaining leases have moved to the Slot's retired Counter.
const retiredBit = int64(1) << 62

// held is one stored value. While it is current, its leases are counted in
// leases with atomic operations alone; when it is replaced, the count is
// frozen by setting retiredBit and handed to the Slot's retired Counter as a
// single lease that is released when the last of them is.
type held[K cmp.Ordered, V any] struct {
	s      *Slot[K, V]
	key    K
	val    V
	leases atomic.Int64 // outstanding leases, | retiredBit once replaced

	// Set once, under s.mu, before retiredBit is.
	group     *lease.Lease[K] // stands for the leases outstanding at retirement
	remaining atomic.Int64    // of those, how many are not yet released
}

// Set stores v under key k, replacing whatever the slot held. Leases on the
// replaced value are unaffected: their key stays leased until they are
// released.
//
// It panics if k is NaN, and then leaves the slot as it was. -0.0 and +0.0
// are one key.
func (s *Slot[K, V]) Set(k K, v V) {
	if isNaN(k) {
		panic(errNaN)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store(k, v)
}

// SetIfNewer stores v under key k only when the slot is empty or k is
// greater than the held key, and reports whether it stored. A refused call
// leaves the slot exactly as it was.
//
// It panics if k is NaN, and then leaves the slot as it was. -0.0 and +0.0
// are one key: neither is newer than the other.
func (s *Slot[K, V]) SetIfNewer(k K, v V) bool {
	if isNaN(k) {
		panic(errNaN)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.cur.Load(); h != nil && !(cmp.Less(h.key, k)) {
		return false
	}
	s.store(k, v)
	return true
}

// Get returns the held key and value and true, or zero values and false
// when the slot is empty. Get does not lease the key: a reader that will use
// resources named by the key calls [Slot.Lease] instead.
func (s *Slot[K, V]) Get() (k K, v V, ok bool) {
	if h := s.cur.Load(); h != nil {
		return h.key, h.val, true
	}
	return k, v, false
}

// Clear drops the held value, so that the slot holds nothing. Leases on the
// dropped value are kept: their key stays leased until they are released.
func (s *Slot[K, V]) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.cur.Load(); h != nil {
		s.retire(h)
		s.cur.Store(nil)
	}
}

// Leased returns the keys with at least one outstanding lease, in ascending
// order, whether or not they are still held. It returns nil when nothing is
// leased.
func (s *Slot[K, V]) Leased() []K {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.retired.Leased()
	if h := s.cur.Load(); h != nil && h.leases.Load() > 0 {
		if i, found := slices.BinarySearch(keys, h.key); !found {
			keys = slices.Insert(keys, i, h.key)
		}
	}
	return keys
}

// Counts returns the number of outstanding leases on each leased key,
// whether or not the key is still held. It returns an empty map when
// nothing is leased.
func (s *Slot[K, V]) Counts() map[K]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[K]int)
	for h := range s.old {
		if n := h.remaining.Load(); n > 0 {
			counts[h.key] += int(n)
		}
	}
	if h := s.cur.Load(); h != nil {
		if n := h.leases.Load() &^ retiredBit; n > 0 {
			counts[h.key] += int(n)
		}
	}
	return counts
}

// A LeasedValue is one value of a [Slot] with outstanding leases, as
// [Slot.LeasedValues] reports it.
type LeasedValue[K cmp.Ordered, V any] struct {
	Key     K
	Value   V
	Leases  int  // outstanding leases on this value, at least 1
	Current bool // the value is the one the slot holds
}

// LeasedValues returns every value with at least one outstanding lease,
// whether it is still held or was replaced or cleared, with its count, in
// ascending order of key; values stored under one key each appear once. It
// returns nil when nothing is leased.
//
// It makes the promise of [Slot.Leased] per value: a Lease that races a
// Set either gets the old value, which is then in every LeasedValues that
// begins after the Set returned until the lease is released, or gets the
// new one. Two values stored one after the other under one key are told
// apart, which Leased, listing keys, cannot do.
func (s *Slot[K, V]) LeasedValues() []LeasedValue[K, V] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var vals []LeasedValue[K, V]
	for h := range s.old {
		if n := h.remaining.Load(); n > 0 {
			vals = append(vals, LeasedValue[K, V]{Key: h.key, Value: h.val, Leases: int(n)})
		}
	}
	if h := s.cur.Load(); h != nil {
		if n := h.leases.Load() &^ retiredBit; n > 0 {
			vals = append(vals, LeasedValue[K, V]{Key: h.key, Value: h.val, Leases: int(n), Current: true})
		}
	}
	slices.SortStableFunc(vals, func(a, b LeasedValue[K, V]) int {
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		switch { // the current value last among its key's
		case a.Current:
			return 1
		case b.Current:
			return -1
		}
		return 0
	})
	return vals
}

// Freed returns a channel that is closed when, after the call, the last
// outstanding lease on a value that is no longer held (replaced by a Set or
// dropped by Clear) is released: the moment its resources may go. A
// release of the held value's lease does not close it. Take the channel
// before looking at [Slot.LeasedValues], so that no release between the
// look and the wait is missed.
func (s *Slot[K, V]) Freed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed == nil {
		s.freed = make(chan struct{})
	}
	return s.freed
}

// store installs (k, v) as the held value. s.mu is held.
func (s *Slot[K, V]) store(k K, v V) {
	if h := s.cur.Load(); h != nil {
		s.retire(h)
	}
	s.cur.Store(&held[K, V]{s: s, key: k, val: v})
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// retire freezes h's lease count and moves it to the retired Counter. After
// retire, a Lease that loaded h backs off to s.mu and reloads; a release of
// one of h's leases counts down h.remaining instead. s.mu is held.
func (s *Slot[K, V]) retire(h *held[K, V]) {
	h.group = s.retired.Acquire(h.key)
	n := h.leases.Load()
	for !h.leases.CompareAndSwap(n, n|retiredBit) {
		n = h.leases.Load()
	}
	// Releases that saw retiredBit may already have counted down; whoever
	// brings remaining to zero releases the group.
	if h.remaining.Add(n) == 0 {
		h.group.Release()
		if n > 0 && s.freed != nil {
			// Its last leases were released while it was being replaced.
			close(s.freed)
			s.freed = nil
		}
		return
	}
	if s.old == nil {
		s.old = make(map[*held[K, V]]struct{})
	}
	s.old[h] = struct{}{}
}

// A Lease holds the key of the value it was taken on leased until it is
// released. It is obtained from [Slot.Lease].
type Lease[K cmp.Ordered, V any] struct {
	h        *held[K, V]
	released atomic.Bool
	cleanup  runtime.Cleanup // registered when leak reporting is on
}

// Lease returns a lease on the held value and true, or nil and false when
// the slot is empty. Reading the value and leasing its key are one atomic
// step: the returned key is in every [Slot.Leased] that begins after Lease
// returns, until the lease is released, whatever Set or Clear runs meanwhile.
// The caller must call [Lease.Release] when done, typically with defer.
//
// Lease takes no lock unless it races a Set or Clear.
func (s *Slot[K, V]) Lease() (*Lease[K, V], bool) {
	for {
		h := s.cur.Load()
		if h == nil {
			return nil, false
		}
		n := h.leases.Load()
		if n&retiredBit != 0 {
			// A writer is replacing h; it holds s.mu until the new value is
			// in place.
			s.mu.Lock()
			//lint:ignore SA2001 the empty critical section waits for the writer
			s.mu.Unlock()
			continue
		}
		if h.leases.CompareAndSwap(n, n+1) {
			l := &Lease[K, V]{h: h}
			if s.leakFn.Load() != nil {
				s.track(l)
			}
			return l, true
		}
	}
}

// Key returns the key of the leased value.
func (l *Lease[K, V]) Key() K { return l.h.key }

// Value returns the leased value.
func (l *Lease[K, V]) Value() V { return l.h.val }

// Release releases l. It is idempotent: only the first call does anything.
// Release on a nil *Lease does nothing.
func (l *Lease[K, V]) Release() {
	if l == nil || !l.released.CompareAndSwap(false, true) {
		return
	}
	l.cleanup.Stop() // a no-op when none was registered
	h := l.h
	for {
		n := h.leases.Load()
		if n&retiredBit != 0 {
			break
		}
		if h.leases.CompareAndSwap(n, n-1) {
			return
		}
	}
	// h was replaced while l was out: l is one of the leases its group
	// stands for.
	if h.remaining.Add(-1) == 0 {
		s := h.s
		s.mu.Lock()
		h.group.Release()
		delete(s.old, h)
		if s.freed != nil {
			close(s.freed)
			s.freed = nil
		}
		s.mu.Unlock()
	}
}
