package slot_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"leasekit.dev/lease"
	"leasekit.dev/slot"
)

//go:noinline
func dropLease(s *slot.Slot[int64, string]) { s.Lease() }

func TestLeakIsReportedNotReleased(t *testing.T) {
	var s slot.Slot[int64, string]
	s.Set(3, "gen-3")
	reports := make(chan lease.Leak[int64], 4)
	s.ReportLeaks(func(l lease.Leak[int64]) { reports <- l })

	before := time.Now()
	dropLease(&s)
	kept, _ := s.Lease()
	s.Set(4, "gen-4")

	var got lease.Leak[int64]
	reported := false
	for i := 0; i < 100 && !reported; i++ {
		runtime.GC()
		select {
		case got = <-reports:
			reported = true
		default:
			time.Sleep(time.Millisecond)
		}
	}
	if !reported {
		t.Fatal("a dropped lease was not reported after 100 garbage collections")
	}
	if got.Key != 3 || got.Acquired.Before(before) {
		t.Fatalf("report = %+v, want key 3 taken after %v", got, before)
	}
	if leased := s.Leased(); !slices.Equal(leased, []int64{3}) {
		t.Fatalf("Leased() = %v, want [3]: a leak is never released", leased)
	}
	kept.Release()
	for range 5 {
		runtime.GC()
	}
	select {
	case l := <-reports:
		t.Fatalf("a released lease was reported: %+v", l)
	default:
	}
	runtime.KeepAlive(kept)
}
