package platform_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"leasekit.dev/lease"
	"leasekit.dev/platform"
)

//go:noinline
func dropLease(s *platform.Store) { s.Lease() }

// A release function dropped without being called is reported, and its
// generation stays leased.
func TestStoreReportsLeakedLease(t *testing.T) {
	var s platform.Store
	reports := make(chan lease.Leak[int64], 4)
	s.ReportLeaks(func(l lease.Leak[int64]) { reports <- l })
	s.SetGenerated(platform.Generated{Generation: 3})
	dropLease(&s)
	_, kept, _ := s.Lease()
	s.SetGenerated(platform.Generated{Generation: 4})

	var got lease.Leak[int64]
	for i := 0; i < 100 && got.Key == 0; i++ {
		runtime.GC()
		select {
		case got = <-reports:
		default:
			time.Sleep(time.Millisecond)
		}
	}
	if got.Key != 3 {
		t.Fatalf("no leak of generation 3 reported after 100 collections (got %+v)", got)
	}
	kept()
	if l := s.Leased(); !slices.Equal(l, []int64{3}) {
		t.Fatalf("Leased() = %v, want [3]: a leak is never released", l)
	}
	runtime.KeepAlive(kept)
}
