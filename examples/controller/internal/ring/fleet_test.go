package ring

import (
	"fmt"
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
	targets := Targets(ids)
	checkPartition(t, targets)
	var worstMoved, worstShare float64 = -1, 0
	worstRanges, membersMax := 0, 1
	counts := map[string]int{}
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
		counts[kind]++
		n := max(before, len(ids))
		membersMax = max(membersMax, len(ids))
		next := Assign(ids, targets)
		where := fmt.Sprintf("event %d (%s, %d → %d members)", e, kind, before, len(ids))
		checkPartition(t, next)
		if again := Assign(ids, next); !sameTargets(again, next) {
			t.Fatalf("%s: the targets are not a fixed point:\n%v\nthen\n%v", where, next, again)
		}
		if mid := halfDone(rng, targets, next); !sameTargets(Assign(ids, mid), next) {
			t.Fatalf("%s: a handover half done (claims %v) changes the targets %v to %v", where, mid, next, Assign(ids, mid))
		}
		var moved, largest float64
		for id, s := range next {
			moved += s.Minus(targets[id]).Fraction()
			largest = max(largest, s.Fraction())
			worstRanges = max(worstRanges, len(s))
			if len(s) > rangesBound {
				t.Errorf("%s: %s's target has %d ranges, more than %d", where, id, len(s), rangesBound)
			}
		}
		over := moved - 1/float64(n)
		share := largest * float64(len(ids))
		if over > movedSlack {
			t.Errorf("%s: %.4f of the space changed owner, more than 1/%d + %.2f", where, moved, n, movedSlack)
		}
		if share > shareBound {
			t.Errorf("%s: the largest share is %.3f times the mean, more than %.2f", where, share, shareBound)
		}
		worstMoved, worstShare = max(worstMoved, over), max(worstShare, share)
		targets = next
	}
	t.Logf("%d joins, %d leaves, %d expiries", counts["join"], counts["leave"], counts["expiry"])
	if membersMax != fleetMembers {
		t.Errorf("the fleet reached %d members, not %d", membersMax, fleetMembers)
	}
	line := fmt.Sprintf("RING members_max=%d events=%d moved_over_ideal_max=%.4f share_max_over_mean=%.3f ranges_max=%d",
		membersMax, fleetEvents, worstMoved, worstShare, worstRanges)
	t.Log(line)
	if testing.Verbose() {
		fmt.Println(line)
	}
}

// halfDone returns claims halfway through the handover from before to
// after: each member that loses parts has released them or not yet, and
// each that gains takes any of the parts released to it.
func halfDone(rng *rand.Rand, before, after map[string]Set) map[string]Set {
	released := Set(nil)
	mid := map[string]Set{}
	for id, was := range before {
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
	for id, now := range after {
		gain := now.Minus(before[id]).Intersect(released)
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
