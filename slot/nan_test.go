package slot_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"leasekit.dev/slot"
)

func TestSetNaNPanicsAndChangesNothing(t *testing.T) {
	var s slot.Slot[float64, string]
	s.Set(1, "one")
	l, _ := s.Lease()
	defer l.Release()
	if got := panicValue(func() { s.Set(math.NaN(), "nan") }); got != nanPanic {
		t.Fatalf("Set(NaN) panicked with %v, want %q", got, nanPanic)
	}
	if got := panicValue(func() { s.SetIfNewer(math.NaN(), "nan") }); got != nanPanic {
		t.Fatalf("SetIfNewer(NaN) panicked with %v, want %q", got, nanPanic)
	}
	if k, v, ok := s.Get(); !ok || k != 1 || v != "one" {
		t.Fatalf("Get() after refused Sets = (%v, %q, %v), want (1, \"one\", true)", k, v, ok)
	}
	if got := s.Leased(); !slices.Equal(got, []float64{1}) {
		t.Fatalf("Leased() after refused Sets = %v, want [1]", got)
	}
	// The slot still works: the refused NaN left no trace behind.
	s.Set(2, "two")
	if !s.SetIfNewer(3, "three") {
		t.Fatal("SetIfNewer(3) over 2 refused")
	}
	if got := s.Leased(); !slices.Equal(got, []float64{1}) {
		t.Fatalf("Leased() = %v, want [1]", got)
	}
}

func TestSetNaNOnEmptySlotPanics(t *testing.T) {
	var s slot.Slot[float32, int]
	if got := panicValue(func() { s.SetIfNewer(float32(math.NaN()), 0) }); got != nanPanic {
		t.Fatalf("SetIfNewer(NaN) on an empty slot panicked with %v, want %q", got, nanPanic)
	}
	if _, _, ok := s.Get(); ok {
		t.Fatal("a refused SetIfNewer stored a value")
	}
}

func TestSignedZerosAreOneKey(t *testing.T) {
	var s slot.Slot[float64, string]
	s.Set(0, "zero")
	if s.SetIfNewer(math.Copysign(0, -1), "negative zero") {
		t.Fatal("SetIfNewer(-0) over +0 stored: -0 is not newer than +0")
	}
	l, _ := s.Lease()
	s.Set(math.Copysign(0, -1), "negative zero")
	m, _ := s.Lease()
	if got := s.Leased(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("Leased() with leases on +0 and -0 = %v, want one zero key", got)
	}
	l.Release()
	m.Release()
	if got := s.Leased(); got != nil {
		t.Fatalf("Leased() after every release = %v, want nil", got)
	}
}

// TestWaitAtLeastNaN: a NaN minimum is below every key, as cmp.Compare
// orders it: WaitAtLeast(NaN) leases whatever the slot holds, and waits
// for a value while it holds none.
func TestWaitAtLeastNaN(t *testing.T) {
	var s slot.Slot[float64, string]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l, err := s.WaitAtLeast(ctx, math.NaN()); err != context.Canceled || l != nil {
		t.Fatalf("WaitAtLeast(NaN) on an empty slot = (%v, %v), want (nil, context.Canceled)", l, err)
	}
	s.Set(math.Inf(-1), "lowest")
	l, err := s.WaitAtLeast(context.Background(), math.NaN())
	if err != nil || l.Key() != math.Inf(-1) || l.Value() != "lowest" {
		t.Fatalf("WaitAtLeast(NaN) = (%v, %v), want a lease on -Inf", l, err)
	}
	l.Release()
}
