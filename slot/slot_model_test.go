package slot_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"leasekit.dev/slot"
	"pgregory.net/rapid"
)

// value is what the tests store under key k, so that a lease's value can be
// checked against its key.
func value(k int) string { return fmt.Sprintf("v%d", k) }

// TestSlotModel drives a Slot with random Set, SetIfNewer, Clear, Get, Lease
// and (repeated) Release calls and checks it against a plain model after
// every step.
func TestSlotModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slot.Slot[int, string]
		var (
			has      bool // the model: whether a value is held,
			key      int  // under which key,
			leases   []*slot.Lease[int, string]
			keys     []int  // keys[i]: the key leases[i] holds
			released []bool // released[i]: leases[i] was released
		)
		t.Repeat(map[string]func(*rapid.T){
			"Set": func(t *rapid.T) {
				k := rapid.IntRange(0, 6).Draw(t, "key")
				s.Set(k, value(k))
				has, key = true, k
			},
			"SetIfNewer": func(t *rapid.T) {
				k := rapid.IntRange(0, 6).Draw(t, "key")
				want := !has || k > key
				if got := s.SetIfNewer(k, value(k)); got != want {
					t.Fatalf("SetIfNewer(%d) = %v with held (%v, %d), want %v", k, got, has, key, want)
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
					t.Fatalf("Lease() = (%d, %q), want (%d, %q)", l.Key(), l.Value(), key, value(key))
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
					t.Fatalf("a released lease changed: (%d, %q), want key %d", leases[i].Key(), leases[i].Value(), keys[i])
				}
			},
			"": func(t *rapid.T) {
				k, v, ok := s.Get()
				if ok != has || (has && (k != key || v != value(key))) {
					t.Fatalf("Get() = (%d, %q, %v), want (%d, %q, %v)", k, v, ok, key, value(key), has)
				}
				var want []int
				counts := map[int]int{}
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
