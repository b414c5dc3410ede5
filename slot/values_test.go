package slot_test

import (
	"fmt"
	"sync"
	"testing"

	"leasekit.dev/slot"
	"pgregory.net/rapid"
)

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLeasedValuesModel drives a Slot whose keys repeat (several values
// stored one after the other under one key) with random Set, Clear, Lease
// and Release calls, and checks after every step that LeasedValues lists
// exactly the values with outstanding leases, with their counts, and that
// Freed is closed exactly when the last lease on a value no longer held is
// released.
func TestLeasedValuesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s slot.Slot[int, string]
		var (
			stored   int    // values stored so far; value i is "v<i>"
			current  string // the held value; "" when none
			curKey   int
			keyOf    = map[string]int{}
			leases   []*slot.Lease[int, string]
			released []bool
		)
		outstanding := func(v string) int {
			n := 0
			for i, l := range leases {
				if !released[i] && l.Value() == v {
					n++
				}
			}
			return n
		}
		t.Repeat(map[string]func(*rapid.T){
			"Set": func(t *rapid.T) {
				k := rapid.IntRange(1, 3).Draw(t, "key")
				v := fmt.Sprintf("v%d", stored)
				stored++
				s.Set(k, v)
				current, curKey, keyOf[v] = v, k, k
			},
			"Clear": func(t *rapid.T) {
				s.Clear()
				current = ""
			},
			"Lease": func(t *rapid.T) {
				l, ok := s.Lease()
				if ok != (current != "") {
					t.Fatalf("Lease() ok = %v, want %v", ok, current != "")
				}
				if !ok {
					return
				}
				if l.Key() != curKey || l.Value() != current {
					t.Fatalf("Lease() = (%v, %q), want (%v, %q)", l.Key(), l.Value(), curKey, current)
				}
				leases = append(leases, l)
				released = append(released, false)
			},
			"Release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease taken yet")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				v := leases[i].Value()
				freed := s.Freed()
				last := !released[i] && outstanding(v) == 1 && v != current
				leases[i].Release()
				released[i] = true
				if got := closed(freed); got != last {
					t.Fatalf("after releasing a lease on %q (current %q): Freed closed = %v, want %v", v, current, got, last)
				}
			},
			"": func(t *rapid.T) {
				var want []slot.LeasedValue[int, string]
				for i := range stored {
					v := fmt.Sprintf("v%d", i)
					if n := outstanding(v); n > 0 {
						want = append(want, slot.LeasedValue[int, string]{Key: keyOf[v], Value: v, Leases: n, Current: v == current})
					}
				}
				got := s.LeasedValues()
				if len(got) != len(want) {
					t.Fatalf("LeasedValues() = %v, want %v", got, want)
				}
				for _, w := range want {
					found := false
					for _, g := range got {
						found = found || g == w
					}
					if !found {
						t.Fatalf("LeasedValues() = %v, want %v (missing %v)", got, want, w)
					}
				}
				for i := 1; i < len(got); i++ {
					if got[i-1].Key > got[i].Key || got[i-1].Key == got[i].Key && got[i-1].Current {
						t.Fatalf("LeasedValues() = %v: not in ascending key order with the current value last", got)
					}
				}
			},
		})
	})
}

// TestLeasedValuesRace checks the race promise per value: a lease taken
// while Sets replace the value under one key is listed, with its value, by
// every LeasedValues that begins after the lease was taken, until it is
// released.
func TestLeasedValuesRace(t *testing.T) {
	var s slot.Slot[int, int]
	s.Set(1, 0)
	const readers, rounds = 4, 2000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i <= rounds; i++ {
			s.Set(1, i) // one key, a new value each time
		}
	})
	for range readers {
		wg.Go(func() {
			for range rounds {
				l, _ := s.Lease()
				v := l.Value()
				found := false
				for _, lv := range s.LeasedValues() {
					found = found || lv.Value == v && lv.Leases >= 1
				}
				l.Release()
				if !found {
					t.Errorf("a lease on value %d is missing from LeasedValues", v)
					return
				}
			}
		})
	}
	wg.Wait()
	if vals := s.LeasedValues(); vals != nil {
		t.Fatalf("LeasedValues() after every release = %v, want nil", vals)
	}
}

// TestLeaseAllocs checks that leasing and releasing the held value
// allocates only the Lease itself.
func TestLeaseAllocs(t *testing.T) {
	var s slot.Slot[int, string]
	s.Set(1, "a")
	_ = s.Freed() // a waiter for freed values costs a lease nothing
	allocs := testing.AllocsPerRun(1000, func() {
		l, _ := s.Lease()
		l.Release()
	})
	if allocs > 1 {
		t.Fatalf("Lease and Release allocate %v times, want at most 1", allocs)
	}
}
