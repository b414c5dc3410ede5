package lease

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// A Counter counts the outstanding leases on each key of type K.
//
// The zero value for a Counter is ready to use and holds no lease. A Counter
// must not be copied after first use.
//
// Counter is safe for concurrent use by multiple goroutines. The release of
// the last lease on a key synchronizes before the return of every
// [Counter.Wait] on that key that it unblocks.
type Counter[K cmp.Ordered] struct {
	mu      sync.Mutex
	counts  map[K]int           // keys with at least one outstanding lease
	drained map[K]chan struct{} // closed when the key's count reaches zero
	idle    chan struct{}       // closed when no key is leased
	leakFn  atomic.Pointer[func(Leak[K])]
}

// A Lease is one outstanding lease on a key of a [Counter]. It is released
// by [Lease.Release].
type Lease[K cmp.Ordered] struct {
	c        *Counter[K]
	key      K
	released atomic.Bool
	tracked  bool // a leak cleanup is registered
	cleanup  runtime.Cleanup
}

// Acquire leases k and returns the lease. k counts as leased until the
// returned lease, and every other lease on k, is released. Acquire never
// blocks for longer than it takes to update the count.
//
// It panics if k is NaN: NaN equals no key, not even itself, so a lease on
// it could never be found again. -0.0 and +0.0 are one key.
func (c *Counter[K]) Acquire(k K) *Lease[K] {
	if isNaN(k) {
		panic(errNaN)
	}
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[K]int)
	}
	c.counts[k]++
	c.mu.Unlock()

	l := &Lease[K]{c: c, key: k}
	if c.leakFn.Load() != nil {
		c.track(l)
	}
	return l
}

// Count returns the number of outstanding leases on k. Count(NaN) is 0,
// since [Counter.Acquire] refuses NaN.
func (c *Counter[K]) Count(k K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[k]
}

// Leased returns the keys with at least one outstanding lease, in ascending
// order. It returns nil when no key is leased.
func (c *Counter[K]) Leased() []K {
	c.mu.Lock()
	if len(c.counts) == 0 {
		c.mu.Unlock()
		return nil
	}
	keys := make([]K, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	slices.Sort(keys)
	return keys
}

// Wait blocks until k has no outstanding lease, then returns nil. If ctx is
// done first, Wait returns ctx.Err() and leaves the Counter unchanged. When
// k is not leased on entry, Wait returns nil at once, even if ctx is already
// done.
//
// A key may be leased again right after Wait returns: Wait reports that the
// count reached zero, not that it stays there. Wait(ctx, NaN) returns nil at
// once, since [Counter.Acquire] refuses NaN.
func (c *Counter[K]) Wait(ctx context.Context, k K) error {
	c.mu.Lock()
	if c.counts[k] == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.drained == nil {
		c.drained = make(map[K]chan struct{})
	}
	ch := c.drained[k]
	if ch == nil {
		ch = make(chan struct{})
		c.drained[k] = ch
	}
	c.mu.Unlock()
	return await(ctx, ch)
}

// WaitIdle blocks until no key has an outstanding lease, then returns nil:
// the drain before shutdown. If ctx is done first, WaitIdle returns
// ctx.Err() and leaves the Counter unchanged. When nothing is leased on
// entry, WaitIdle returns nil at once.
func (c *Counter[K]) WaitIdle(ctx context.Context) error {
	c.mu.Lock()
	if len(c.counts) == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	ch := c.idle
	c.mu.Unlock()
	return await(ctx, ch)
}

func await(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		// A release that raced the cancellation still counts.
		select {
		case <-ch:
			return nil
		default:
			return ctx.Err()
		}
	}
}

// Key returns the key l leases.
func (l *Lease[K]) Key() K { return l.key }

// Release releases l. It is idempotent: only the first call on a lease
// changes the count; later calls do nothing. Release on a nil *Lease does
// nothing.
func (l *Lease[K]) Release() {
	if l == nil || !l.released.CompareAndSwap(false, true) {
		return
	}
	if l.tracked {
		l.cleanup.Stop()
	}
	l.c.release(l.key)
}

func (c *Counter[K]) release(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.counts[k] - 1
	if n > 0 {
		c.counts[k] = n
		return
	}
	if n < 0 {
		panic("lease: released a key that is not leased")
	}
	delete(c.counts, k)
	if ch, ok := c.drained[k]; ok {
		close(ch)
		delete(c.drained, k)
	}
	if len(c.counts) == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}
