package lease_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"leasekit.dev/lease"
	"pgregory.net/rapid"
)

// modelKeys are the keys the model test draws: small values that collide
// often, the signed zeros (one key), the infinities, the extremes of
// float64, and NaN, which Acquire must refuse.
var modelKeys = []float64{
	-1, 0, 1, 2,
	math.Copysign(0, -1),
	math.Inf(1), math.Inf(-1),
	math.MaxFloat64, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.NaN(),
}

// panicValue runs f and returns what it panicked with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

const nanPanic = "lease: key is NaN; NaN is not a valid key"

// TestCounterModel drives a Counter with random Acquire and Release calls,
// releases repeated at random, and checks it against a plain map after every
// step. Keys are float64, NaN and the signed zeros included.
func TestCounterModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c lease.Counter[float64]
		model := map[float64]int{}         // key -> outstanding leases; -0 and +0 share an entry, as in any map
		var leases []*lease.Lease[float64] // every lease handed out
		var released []bool                // released[i]: leases[i] was released
		drawKey := rapid.SampledFrom(modelKeys)

		t.Repeat(map[string]func(*rapid.T){
			"Acquire": func(t *rapid.T) {
				k := drawKey.Draw(t, "key")
				if math.IsNaN(k) {
					if got := panicValue(func() { c.Acquire(k) }); got != nanPanic {
						t.Fatalf("Acquire(NaN) panicked with %v, want %q", got, nanPanic)
					}
					return // the "" action checks that nothing changed
				}
				l := c.Acquire(k)
				if l.Key() != k || math.Signbit(l.Key()) != math.Signbit(k) {
					t.Fatalf("Acquire(%v).Key() = %v", k, l.Key())
				}
				leases = append(leases, l)
				released = append(released, false)
				model[k]++
			},
			"Release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease handed out yet")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				leases[i].Release()
				if !released[i] {
					released[i] = true
					k := leases[i].Key()
					if model[k]--; model[k] == 0 {
						delete(model, k)
					}
				}
			},
			"WaitDone": func(t *rapid.T) {
				// With a done context, Wait reports whether the key is free
				// without blocking.
				k := drawKey.Draw(t, "key")
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err := c.Wait(ctx, k)
				if free := model[k] == 0; free != (err == nil) {
					t.Fatalf("Wait(done, %v) = %v with %d leases", k, err, model[k])
				}
				err = c.WaitIdle(ctx)
				if idle := len(model) == 0; idle != (err == nil) {
					t.Fatalf("WaitIdle(done) = %v with leases %v", err, model)
				}
			},
			"": func(t *rapid.T) {
				var want []float64
				for k := range model {
					want = append(want, k)
				}
				slices.Sort(want)
				if got := c.Leased(); !slices.Equal(got, want) {
					t.Fatalf("Leased() = %v, want %v", got, want)
				}
				for _, k := range modelKeys {
					if got := c.Count(k); got != model[k] {
						t.Fatalf("Count(%v) = %d, want %d", k, got, model[k])
					}
				}
			},
		})
	})
}

func TestNilLeaseReleaseIsNoOp(t *testing.T) {
	var l *lease.Lease[string]
	l.Release() // must not panic
}
