package bench

import (
	"testing"

	"leasekit.dev/internal/baseline"
	"leasekit.dev/lease"
	"leasekit.dev/slot"
)

func BenchmarkCounterAcquireRelease(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) {
		var c lease.Counter[int64]
		b.ReportAllocs()
		for b.Loop() {
			c.Acquire(7).Release()
		}
	})
	b.Run("impl=baseline", func(b *testing.B) {
		var c baseline.Counter[int64]
		b.ReportAllocs()
		for b.Loop() {
			c.Acquire(7)()
		}
	})
}

func BenchmarkCounterAcquireReleaseParallel(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) {
		var c lease.Counter[int64]
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Acquire(7).Release()
			}
		})
	})
	b.Run("impl=baseline", func(b *testing.B) {
		var c baseline.Counter[int64]
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Acquire(7)()
			}
		})
	})
}

func BenchmarkSlotLeaseRelease(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) {
		var s slot.Slot[int64, string]
		s.Set(7, "gen-7")
		b.ReportAllocs()
		for b.Loop() {
			l, _ := s.Lease()
			l.Release()
		}
	})
	b.Run("impl=baseline", func(b *testing.B) {
		var s baseline.Store[int64, string]
		s.Set(7, "gen-7")
		b.ReportAllocs()
		for b.Loop() {
			_, _, release, _ := s.Lease()
			release()
		}
	})
}

func BenchmarkSlotLeaseReleaseParallel(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) {
		var s slot.Slot[int64, string]
		s.Set(7, "gen-7")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l, _ := s.Lease()
				l.Release()
			}
		})
	})
	b.Run("impl=baseline", func(b *testing.B) {
		var s baseline.Store[int64, string]
		s.Set(7, "gen-7")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _, release, _ := s.Lease()
				release()
			}
		})
	})
}

// Leased with 1,000 keys leased: the prune path's keep set.
func BenchmarkLeased1000(b *testing.B) {
	const keys = 1000
	b.Run("impl=leasekit", func(b *testing.B) {
		var c lease.Counter[int64]
		for k := range int64(keys) {
			defer c.Acquire(k).Release()
		}
		b.ReportAllocs()
		for b.Loop() {
			if len(c.Leased()) != keys {
				b.Fatal("wrong key count")
			}
		}
	})
	b.Run("impl=baseline", func(b *testing.B) {
		var c baseline.Counter[int64]
		for k := range int64(keys) {
			defer c.Acquire(k)()
		}
		b.ReportAllocs()
		for b.Loop() {
			if len(c.Leased()) != keys {
				b.Fatal("wrong key count")
			}
		}
	})
}
