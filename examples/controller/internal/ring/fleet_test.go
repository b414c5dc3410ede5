package ring

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// The bounds TestRingFleet holds the assignment to.
const (
	fleetMembers = 100  // the largest ring
	fleetEvents  = 1000 // joins, leaves and expiries
	fleetSeed    = 44
	movedSlack   = 0.02 // a change moves at most 1/N + this
	shareBound   = 1.25 // the largest share over the mean
	rangesBound  = 128  // runs per target
)

// TestRingFleet runs a fleet from 1 member up to 100 and down again
// through 1,000 random joins, leaves and expiries, the members taking
// over each change through the handover (the new targets as the next
// claims). After each change it checks that the targets cover the space
// once and are a fixed point, that a handover half done (some members
// released what leaves them, some took part of what they gained) gives
// the same targets, that the share of the space that changed owner is
// at most 1/N + 2% (N the larger of the rings before and after), that
// the largest share is at most 1.25 times the mean, and that no target
// has more than 128 ranges. It logs one RING line with the worst of each.
func TestRingFleet(t *testing.T) {
	t.Logf("seed %d", fleetSeed)
	w := runFleet(Assign, func(ev fleetEvent) {
		checkPartition(t, ev.next)
		if again := Assign(ev.ids, ev.next); !sameTargets(again, ev.next) {
			t.Fatalf("%s: the targets are not a fixed point:\n%v\nthen\n%v", ev, ev.next, again)
		}
		if mid := halfDone(rand.New(rand.NewPCG(fleetSeed, uint64(ev.index)+1)), ev.before, ev.next); !sameTargets(Assign(ev.ids, mid), ev.next) {
			t.Fatalf("%s: a handover half done (claims %v) changes the targets %v to %v", ev, mid, ev.next, Assign(ev.ids, mid))
		}
		if ev.over > movedSlack {
			t.Errorf("%s: %.4f of the space changed owner, more than 1/%d + %.2f", ev, ev.moved, ev.n, movedSlack)
		}
		if ev.share > shareBound {
			t.Errorf("%s: the largest share is %.3f times the mean, more than %.2f", ev, ev.share, shareBound)
		}
		if ev.ranges > rangesBound {
			t.Errorf("%s: a target has %d ranges, more than %d", ev, ev.ranges, rangesBound)
		}
	})
	t.Logf("%d joins, %d leaves, %d expiries", w.counts["join"], w.counts["leave"], w.counts["expiry"])
	if w.membersMax != fleetMembers {
		t.Errorf("the fleet reached %d members, not %d", w.membersMax, fleetMembers)
	}
	line := fmt.Sprintf("RING members_max=%d events=%d moved_over_ideal_max=%.4f share_max_over_mean=%.3f ranges_max=%d",
		w.membersMax, fleetEvents, w.over, w.share, w.ranges)
	t.Log(line)
	if testing.Verbose() {
		fmt.Println(line)
	}
}

// A fleetEvent is one change of the fleet, as runFleet measured it.
type fleetEvent struct {
	index        int
	kind         string
	ids          []string       // the members after it
	before, next map[string]Set // the targets before and after it
	n            int            // the larger of the rings before and after
	moved, over  float64        // the share that changed owner, and less 1/n
	share        float64        // the largest share over the mean
	ranges       int            // the most ranges of a target
}

func (ev fleetEvent) String() string {
	return fmt.Sprintf("event %d (%s, %d → %d members)", ev.index, ev.kind, len(ev.before), len(ev.ids))
}

// fleetWorst is the worst of a fleet's events.
type fleetWorst struct {
	over, share        float64
	ranges, membersMax int
	counts             map[string]int
}

// runFleet runs the fleet of TestRingFleet through assign, from the
// same seed, calls check after each event, and returns the worst.
func runFleet(assign func(ids []string, claims map[string]Set) map[string]Set, check func(fleetEvent)) fleetWorst {
	rng := rand.New(rand.NewPCG(fleetSeed, 0))
	serial := 0
	newID := func() string {
		serial++
		if rng.IntN(2) == 0 {
			return fmt.Sprintf("ring-%d", serial) // a StatefulSet's pods
		}
		return fmt.Sprintf("leasekit-controller-manager-%08x-%05x", rng.Uint32(), rng.Uint32()&0xfffff) // a Deployment's
	}
	ids := []string{newID()}
	targets := assign(ids, nil)
	w := fleetWorst{over: -1, membersMax: 1, counts: map[string]int{}}
	for e := range fleetEvents {
		before := len(ids)
		grow := 0.8
		if e >= fleetEvents/2 {
			grow = 0.2
		}
		kind := "join"
		switch {
		case before == 1 || before < fleetMembers && rng.Float64() < grow:
			ids = append(ids, newID())
		default:
			// A leave publishes an empty claim and deletes its Lease; an
			// expiry is a crash whose Lease lapsed. Either way the
			// member's claim stops counting.
			kind = []string{"leave", "expiry"}[rng.IntN(2)]
			i := rng.IntN(len(ids))
			ids = slices.Delete(ids, i, i+1)
		}
		w.counts[kind]++
		w.membersMax = max(w.membersMax, len(ids))
		ev := fleetEvent{index: e, kind: kind, ids: slices.Clone(ids), before: targets, n: max(before, len(ids))}
		ev.next = assign(ids, targets)
		var largest float64
		for id, s := range ev.next {
			ev.moved += s.Minus(targets[id]).Fraction()
			largest = max(largest, s.Fraction())
			ev.ranges = max(ev.ranges, len(s))
		}
		ev.over = ev.moved - 1/float64(ev.n)
		ev.share = largest * float64(len(ids))
		check(ev)
		w.over, w.share, w.ranges = max(w.over, ev.over), max(w.share, ev.share), max(w.ranges, ev.ranges)
		targets = ev.next
	}
	return w
}

// halfDone returns claims halfway through the handover from before to
// after: each member that loses parts has released them or not yet, and
// each that gains takes any of the parts released to it.
func halfDone(rng *rand.Rand, before, after map[string]Set) map[string]Set {
	released := Set(nil)
	mid := map[string]Set{}
	for _, id := range slices.Sorted(maps.Keys(before)) { // in order: the draws are the seed's
		was := before[id]
		now, live := after[id]
		if !live {
			released = released.Union(was) // left or expired
			continue
		}
		mid[id] = was
		if lost := was.Minus(now); !lost.Empty() && rng.IntN(2) == 0 {
			mid[id] = was.Intersect(now)
			released = released.Union(lost)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(after)) {
		gain := after[id].Minus(before[id]).Intersect(released)
		for _, sp := range gain {
			if rng.IntN(2) == 0 {
				mid[id] = mid[id].Union(Set{sp})
			}
		}
	}
	return mid
}

func sameTargets(a, b map[string]Set) bool {
	if len(a) != len(b) {
		return false
	}
	for id, s := range a {
		if t, ok := b[id]; !ok || !t.Equal(s) {
			return false
		}
	}
	return true
}
