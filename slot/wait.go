package slot

import (
	"cmp"
	"context"
)

// Wait blocks until the slot holds a value, then leases it and returns the
// lease: a reader that starts before the first value is stored. If ctx is
// done first, Wait returns ctx.Err() and leases nothing.
func (s *Slot[K, V]) Wait(ctx context.Context) (*Lease[K, V], error) {
	return s.wait(ctx, func(K) bool { return true })
}

// WaitAtLeast blocks until the slot holds a value whose key is at least min,
// then leases it and returns the lease: a reader that must see a given
// generation or a newer one. If ctx is done first, WaitAtLeast returns
// ctx.Err() and leases nothing.
//
// Keys are compared with [cmp.Compare], which orders a NaN below every
// key: WaitAtLeast(ctx, NaN) accepts any value, as [Slot.Wait] does. (No
// key is NaN: [Slot.Set] refuses it.)
func (s *Slot[K, V]) WaitAtLeast(ctx context.Context, min K) (*Lease[K, V], error) {
	return s.wait(ctx, func(k K) bool { return cmp.Compare(k, min) >= 0 })
}

func (s *Slot[K, V]) wait(ctx context.Context, accept func(K) bool) (*Lease[K, V], error) {
	for {
		// Take the channel before looking, so that a store between the look
		// and the select still wakes us.
		s.mu.Lock()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()

		if l, ok := s.Lease(); ok {
			if accept(l.Key()) {
				return l, nil
			}
			l.Release()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
