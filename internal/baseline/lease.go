package baseline

import (
	"cmp"
	"slices"
	"sync"
)

// Counter counts outstanding leases per key behind one mutex; each lease is
// a sync.Once-guarded release closure. The zero value is ready to use.
type Counter[K cmp.Ordered] struct {
	mu     sync.Mutex
	counts map[K]int
}

// Acquire leases k and returns its idempotent release function.
func (c *Counter[K]) Acquire(k K) (release func()) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[K]int)
	}
	c.counts[k]++
	c.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { c.release(k) }) }
}

func (c *Counter[K]) release(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts[k]--; c.counts[k] == 0 {
		delete(c.counts, k)
	}
}

// Leased returns the leased keys in ascending order.
func (c *Counter[K]) Leased() []K {
	c.mu.Lock()
	keys := make([]K, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	slices.Sort(keys)
	return keys
}

// Store holds one value keyed on K and leases its key, all behind one
// mutex. The zero value holds nothing.
type Store[K cmp.Ordered, V any] struct {
	mu     sync.Mutex
	key    K
	val    V
	ok     bool
	leases Counter[K]
}

// Set stores v under k.
func (s *Store[K, V]) Set(k K, v V) {
	s.mu.Lock()
	s.key, s.val, s.ok = k, v, true
	s.mu.Unlock()
}

// Lease returns the held key and value with a release function, or ok
// false when nothing is held.
func (s *Store[K, V]) Lease() (k K, v V, release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return k, v, func() {}, false
	}
	return s.key, s.val, s.leases.Acquire(s.key), true
}

// Leased returns the leased keys in ascending order.
func (s *Store[K, V]) Leased() []K { return s.leases.Leased() }
