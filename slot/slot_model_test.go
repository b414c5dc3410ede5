package slot_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"leasekit.dev/slot"
	"pgregory.net/rapid"
)

// value is what the tests store under key k, so that a lease's value can be
// checked against its key. -0 and +0 are one key, so they store one value.
func value(k float64) string {
	if k == 0 {
		k = 0 // drop the sign
	}
	return fmt.Sprintf("v%v", k)
}

// modelKeys are the keys the model test draws: small values, the signed
// zeros (one key), the infinities, the extremes of float64, and NaN, which
// Set and SetIfNewer must refuse.
var modelKeys = []float64{
	0, 1, 2,
	math.Copysign(0, -1),
	math.Inf(1), math.Inf(-1),
	math.MaxFloat64, -math.MaxFloat64,
	math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	math.NaN(),
}

const nanPanic = "slot: key is NaN; NaN is not a valid key"

// panicValue runs f and returns what it panicked with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestSlotModel drives a Slot with random Set, SetIfNewer, Clear, Get, Lease
// and (repeated) Release calls and checks it against a plain model after
// every step. Keys are float64, NaN and the signed zeros included.
func TestSlotModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slot.Slot[float64, string]
		var (
			has      bool    // the model: whether a value is held,
			key      float64 // under which key,
			leases   []*slot.Lease[float64, string]
			keys     []float64 // keys[i]: the key leases[i] holds
			released []bool    // released[i]: leases[i] was released
		)
		drawKey := rapid.SampledFrom(modelKeys)
		t.Repeat(map[string]func(*rapid.T){
			"Set": func(t *rapid.T) {
				k := drawKey.Draw(t, "key")
				if math.IsNaN(k) {
					if got := panicValue(func() { s.Set(k, "nan") }); got != nanPanic {
						t.Fatalf("Set(NaN) panicked with %v, want %q", got, nanPanic)
					}
					return // the "" action checks that nothing changed
				}
				s.Set(k, value(k))
				has, key = true, k
			},
			"SetIfNewer": func(t *rapid.T) {
				k := drawKey.Draw(t, "key")
				if math.IsNaN(k) {
					if got := panicValue(func() { s.SetIfNewer(k, "nan") }); got != nanPanic {
						t.Fatalf("SetIfNewer(NaN) panicked with %v, want %q", got, nanPanic)
					}
					return
				}
				want := !has || k > key
				if got := s.SetIfNewer(k, value(k)); got != want {
					t.Fatalf("SetIfNewer(%v) = %v with held (%v, %v), want %v", k, got, has, key, want)
				}
				if want {
					has, key = true, k
				}
			},
			"Clear": func(t *rapid.T) {
				s.Clear()
				has = false
			},
			"Lease": func(t *rapid.T) {
				l, ok := s.Lease()
				if ok != has {
					t.Fatalf("Lease() ok = %v, want %v", ok, has)
				}
				if !ok {
					if l != nil {
						t.Fatalf("Lease() on an empty slot = %v, want nil", l)
					}
					return
				}
				if l.Key() != key || l.Value() != value(key) {
					t.Fatalf("Lease() = (%v, %q), want (%v, %q)", l.Key(), l.Value(), key, value(key))
				}
				leases = append(leases, l)
				keys = append(keys, key)
				released = append(released, false)
			},
			"Release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease taken yet")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				leases[i].Release()
				released[i] = true
				if leases[i].Key() != keys[i] || leases[i].Value() != value(keys[i]) {
					t.Fatalf("a released lease changed: (%v, %q), want key %v", leases[i].Key(), leases[i].Value(), keys[i])
				}
			},
			"": func(t *rapid.T) {
				k, v, ok := s.Get()
				if ok != has || (has && (k != key || v != value(key))) {
					t.Fatalf("Get() = (%v, %q, %v), want (%v, %q, %v)", k, v, ok, key, value(key), has)
				}
				var want []float64
				counts := map[float64]int{}
				for i, k := range keys {
					if !released[i] {
						want = append(want, k)
						counts[k]++
					}
				}
				if got := s.Counts(); !maps.Equal(got, counts) {
					t.Fatalf("Counts() = %v, want %v", got, counts)
				}
				slices.Sort(want)
				want = slices.Compact(want)
				if got := s.Leased(); !slices.Equal(got, want) {
					t.Fatalf("Leased() = %v, want %v", got, want)
				}
			},
		})
	})
}

func TestNilLeaseReleaseIsNoOp(t *testing.T) {
	var l *slot.Lease[int, string]
	l.Release()
}
