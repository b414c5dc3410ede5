package slot_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"leasekit.dev/slot"
)

func TestWaitLeasesTheFirstValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s slot.Slot[int64, string]
		got := make(chan *slot.Lease[int64, string], 1)
		go func() {
			l, err := s.Wait(context.Background())
			if err != nil {
				t.Errorf("Wait = %v", err)
			}
			got <- l
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("Wait returned before anything was stored")
		default:
		}
		s.Set(3, "gen-3")
		l := <-got
		if l.Key() != 3 || l.Value() != "gen-3" {
			t.Fatalf("Wait leased (%d, %q), want (3, gen-3)", l.Key(), l.Value())
		}
		s.Set(4, "gen-4")
		if leased := s.Leased(); len(leased) != 1 || leased[0] != 3 {
			t.Fatalf("Leased() = %v, want [3]: Wait's lease holds its key", leased)
		}
		l.Release()
	})
}

func TestWaitAtLeastSkipsOlderKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s slot.Slot[int64, string]
		s.Set(1, "gen-1")
		got := make(chan *slot.Lease[int64, string], 1)
		go func() {
			l, err := s.WaitAtLeast(context.Background(), 3)
			if err != nil {
				t.Errorf("WaitAtLeast = %v", err)
			}
			got <- l
		}()
		for _, k := range []int64{2, 1} {
			synctest.Wait()
			select {
			case l := <-got:
				t.Fatalf("WaitAtLeast(3) returned key %d", l.Key())
			default:
			}
			s.Set(k, "older")
		}
		synctest.Wait()
		if leased := s.Leased(); leased != nil {
			t.Fatalf("Leased() = %v while the waiter holds nothing", leased)
		}
		s.Set(5, "gen-5")
		l := <-got
		if l.Key() != 5 {
			t.Fatalf("WaitAtLeast(3) leased key %d, want 5", l.Key())
		}
		l.Release()
	})
}

func TestWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s slot.Slot[int, int]
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			l   *slot.Lease[int, int]
			err error
		}
		first, second := make(chan result, 1), make(chan result, 1)
		go func() { l, err := s.Wait(ctx); first <- result{l, err} }()
		go func() { l, err := s.WaitAtLeast(ctx, 10); second <- result{l, err} }()
		synctest.Wait()
		s.Set(1, 1) // wakes both; the second goes back to sleep
		r := <-first
		if r.err != nil || r.l.Key() != 1 {
			t.Fatalf("Wait after Set(1) = (%v, %v), want a lease on 1", r.l, r.err)
		}
		r.l.Release()
		synctest.Wait()
		cancel()
		r = <-second
		if !errors.Is(r.err, context.Canceled) || r.l != nil {
			t.Fatalf("cancelled WaitAtLeast = (%v, %v), want (nil, context.Canceled)", r.l, r.err)
		}
		if leased := s.Leased(); leased != nil {
			t.Fatalf("Leased() = %v, want nil: a cancelled wait leases nothing", leased)
		}
	})
}
