package lease_test

import (
	"runtime"
	"testing"
	"time"

	"leasekit.dev/lease"
)

//go:noinline
func dropLease(c *lease.Counter[string], k string) {
	c.Acquire(k) // the lease is dropped unreleased
}

func TestLeakIsReportedNotReleased(t *testing.T) {
	var c lease.Counter[string]
	reports := make(chan lease.Leak[string], 4)
	c.ReportLeaks(func(l lease.Leak[string]) { reports <- l })

	before := time.Now()
	dropLease(&c, "gen-3")
	kept := c.Acquire("gen-4")

	var got lease.Leak[string]
	reported := false
	for range 100 {
		runtime.GC()
		select {
		case got = <-reports:
			reported = true
		default:
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
		if reported {
			break
		}
	}
	if !reported {
		t.Fatal("a dropped lease was not reported after 100 garbage collections")
	}
	if got.Key != "gen-3" || got.Acquired.Before(before) {
		t.Fatalf("report = %+v, want key gen-3 acquired after %v", got, before)
	}
	if n := c.Count("gen-3"); n != 1 {
		t.Fatalf("Count(gen-3) = %d after the leak report, want 1: a leak is never released", n)
	}

	// A released lease is not reported.
	kept.Release()
	for range 5 {
		runtime.GC()
	}
	select {
	case l := <-reports:
		t.Fatalf("released lease reported as leaked: %+v", l)
	default:
	}
	runtime.KeepAlive(kept)
}

func TestLeakReportingOffByDefault(t *testing.T) {
	var c lease.Counter[int]
	reports := make(chan lease.Leak[int], 1)
	dropLeaseInt(&c, 1)
	c.ReportLeaks(func(l lease.Leak[int]) { reports <- l }) // installed after the drop
	for range 5 {
		runtime.GC()
	}
	select {
	case l := <-reports:
		t.Fatalf("a lease acquired before reporting was on was reported: %+v", l)
	default:
	}
	c.ReportLeaks(nil)
	dropLeaseInt(&c, 2)
	for range 5 {
		runtime.GC()
	}
	select {
	case l := <-reports:
		t.Fatalf("a lease acquired with reporting off was reported: %+v", l)
	default:
	}
}

//go:noinline
func dropLeaseInt(c *lease.Counter[int], k int) { c.Acquire(k) }
