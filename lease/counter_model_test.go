package lease_test

import (
	"context"
	"slices"
	"testing"

	"leasekit.dev/lease"
	"pgregory.net/rapid"
)

// TestCounterModel drives a Counter with random Acquire and Release calls,
// releases repeated at random, and checks it against a plain map after every
// step.
func TestCounterModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c lease.Counter[int]
		model := map[int]int{}         // key -> outstanding leases
		var leases []*lease.Lease[int] // every lease handed out
		var released []bool            // released[i]: leases[i] was released

		t.Repeat(map[string]func(*rapid.T){
			"Acquire": func(t *rapid.T) {
				k := rapid.IntRange(-3, 5).Draw(t, "key")
				l := c.Acquire(k)
				if l.Key() != k {
					t.Fatalf("Acquire(%d).Key() = %d", k, l.Key())
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
				k := rapid.IntRange(-3, 5).Draw(t, "key")
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				err := c.Wait(ctx, k)
				if free := model[k] == 0; free != (err == nil) {
					t.Fatalf("Wait(done, %d) = %v with %d leases", k, err, model[k])
				}
				err = c.WaitIdle(ctx)
				if idle := len(model) == 0; idle != (err == nil) {
					t.Fatalf("WaitIdle(done) = %v with leases %v", err, model)
				}
			},
			"": func(t *rapid.T) {
				var want []int
				for k := range model {
					want = append(want, k)
				}
				slices.Sort(want)
				if got := c.Leased(); !slices.Equal(got, want) {
					t.Fatalf("Leased() = %v, want %v", got, want)
				}
				for k := -3; k <= 5; k++ {
					if got := c.Count(k); got != model[k] {
						t.Fatalf("Count(%d) = %d, want %d", k, got, model[k])
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
