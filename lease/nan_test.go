package lease_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"leasekit.dev/lease"
)

func TestAcquireNaNPanicsAndChangesNothing(t *testing.T) {
	var c lease.Counter[float64]
	held := c.Acquire(1)
	if got := panicValue(func() { c.Acquire(math.NaN()) }); got != nanPanic {
		t.Fatalf("Acquire(NaN) panicked with %v, want %q", got, nanPanic)
	}
	if got := c.Leased(); !slices.Equal(got, []float64{1}) {
		t.Fatalf("Leased() after a refused Acquire = %v, want [1]", got)
	}
	if got := c.Count(math.NaN()); got != 0 {
		t.Fatalf("Count(NaN) = %d, want 0", got)
	}
	if err := c.Wait(context.Background(), math.NaN()); err != nil {
		t.Fatalf("Wait(NaN) = %v, want nil: NaN is never leased", err)
	}
	held.Release()
	if err := c.WaitIdle(context.Background()); err != nil {
		t.Fatalf("WaitIdle = %v", err)
	}
}

func TestAcquireNaNPanicsForFloat32(t *testing.T) {
	var c lease.Counter[float32]
	if got := panicValue(func() { c.Acquire(float32(math.NaN())) }); got != nanPanic {
		t.Fatalf("Acquire(NaN) panicked with %v, want %q", got, nanPanic)
	}
}

func TestSignedZerosAreOneKey(t *testing.T) {
	var c lease.Counter[float64]
	neg := c.Acquire(math.Copysign(0, -1))
	pos := c.Acquire(0)
	if got := c.Count(0); got != 2 {
		t.Fatalf("Count(+0) = %d after leasing -0 and +0, want 2", got)
	}
	if got := c.Leased(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Leased() = %v, want one zero key", got)
	}
	neg.Release()
	if got := c.Count(math.Copysign(0, -1)); got != 1 {
		t.Fatalf("Count(-0) = %d after one release, want 1", got)
	}
	pos.Release()
	if got := c.Leased(); got != nil {
		t.Fatalf("Leased() = %v after every release, want nil", got)
	}
}
