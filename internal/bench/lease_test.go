package bench

import (
	"errors"
	"testing"

	"leasekit.dev/internal/baseline"
	"leasekit.dev/lease"
	"leasekit.dev/slot"
)

// counterImpls are the counters the acquire benchmarks measure: each op
// acquires key 7 and releases it.
var counterImpls = []impl{
	{"leasekit", func(*testing.B) func() error {
		var c lease.Counter[int64]
		return func() error { c.Acquire(7).Release(); return nil }
	}},
	{"baseline", func(*testing.B) func() error {
		var c baseline.Counter[int64]
		return func() error { c.Acquire(7)(); return nil }
	}},
}

func BenchmarkCounterAcquireRelease(b *testing.B) { measure(b, "", counterImpls...) }

func BenchmarkCounterAcquireReleaseParallel(b *testing.B) { measureParallel(b, counterImpls...) }

// slotImpls are the slots the lease benchmarks measure, each holding
// generation 7: each op leases it and releases it.
var slotImpls = []impl{
	{"leasekit", func(*testing.B) func() error {
		var s slot.Slot[int64, string]
		s.Set(7, "gen-7")
		return func() error {
			l, _ := s.Lease()
			l.Release()
			return nil
		}
	}},
	{"baseline", func(*testing.B) func() error {
		var s baseline.Store[int64, string]
		s.Set(7, "gen-7")
		return func() error {
			_, _, release, _ := s.Lease()
			release()
			return nil
		}
	}},
}

func BenchmarkSlotLeaseRelease(b *testing.B) { measure(b, "", slotImpls...) }

func BenchmarkSlotLeaseReleaseParallel(b *testing.B) { measureParallel(b, slotImpls...) }

// Leased with 1,000 keys leased: the prune path's keep set.
func BenchmarkLeased1000(b *testing.B) {
	const keys = 1000
	errCount := errors.New("wrong key count")
	measure(b, "",
		impl{"leasekit", func(b *testing.B) func() error {
			var c lease.Counter[int64]
			for k := range int64(keys) {
				b.Cleanup(c.Acquire(k).Release)
			}
			return func() error {
				if len(c.Leased()) != keys {
					return errCount
				}
				return nil
			}
		}},
		impl{"baseline", func(b *testing.B) func() error {
			var c baseline.Counter[int64]
			for k := range int64(keys) {
				b.Cleanup(c.Acquire(k))
			}
			return func() error {
				if len(c.Leased()) != keys {
					return errCount
				}
				return nil
			}
		}},
	)
}
