package lease_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"leasekit.dev/lease"
)

// The synctest bubbles below fail on their own if any goroutine they start
// is still blocked when the test function returns, so each test also proves
// that Wait and WaitIdle leave no goroutine behind.

func TestWaitBlocksUntilLastRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c lease.Counter[string]
		a, b := c.Acquire("gen-1"), c.Acquire("gen-1")
		other := c.Acquire("gen-2")
		defer other.Release()

		done := make(chan error, 1)
		go func() { done <- c.Wait(context.Background(), "gen-1") }()

		synctest.Wait()
		assertBlocked(t, done, "Wait with two leases")
		a.Release()
		a.Release() // a repeated release must not count twice
		synctest.Wait()
		assertBlocked(t, done, "Wait with one lease left")
		b.Release()
		if err := <-done; err != nil {
			t.Fatalf("Wait after the last release = %v, want nil", err)
		}
		if n := c.Count("gen-2"); n != 1 {
			t.Fatalf("Count(gen-2) = %d, want 1: other keys are untouched", n)
		}
	})
}

func TestWaitReturnsContextError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c lease.Counter[int]
		l := c.Acquire(7)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 2)
		go func() { done <- c.Wait(ctx, 7) }()
		go func() { done <- c.WaitIdle(ctx) }()
		synctest.Wait()
		cancel()
		for range 2 {
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled wait = %v, want context.Canceled", err)
			}
		}
		if n := c.Count(7); n != 1 {
			t.Fatalf("Count(7) = %d after cancelled waits, want 1", n)
		}
		// The cancelled waits leave the Counter usable: a later Wait still
		// wakes on release.
		done2 := make(chan error, 1)
		go func() { done2 <- c.Wait(context.Background(), 7) }()
		synctest.Wait()
		l.Release()
		if err := <-done2; err != nil {
			t.Fatalf("Wait after release = %v", err)
		}
	})
}

func TestWaitIdleDrainsAllKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c lease.Counter[int]
		if err := c.WaitIdle(context.Background()); err != nil {
			t.Fatalf("WaitIdle on an empty counter = %v", err)
		}
		ls := []*lease.Lease[int]{c.Acquire(1), c.Acquire(2), c.Acquire(2)}
		done := make(chan error, 1)
		go func() { done <- c.WaitIdle(context.Background()) }()
		for _, l := range ls {
			synctest.Wait()
			assertBlocked(t, done, "WaitIdle with leases left")
			l.Release()
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitIdle after the last release = %v", err)
		}
		if got := c.Leased(); got != nil {
			t.Fatalf("Leased() after drain = %v, want nil", got)
		}
	})
}

func TestWaitOnFreeKeyReturnsAtOnce(t *testing.T) {
	var c lease.Counter[int]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Wait(ctx, 3); err != nil {
		t.Fatalf("Wait on a free key with a done context = %v, want nil", err)
	}
}

func assertBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v, want it still blocked", what, err)
	default:
	}
}
