package shard

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"leasekit.dev/examples/controller/internal/ring"
)

// parts returns the set of the parts [lo, end) of a ring of up to 128
// members.
func parts(lo, end uint64) ring.Set {
	const shift = 64 - 9 // ring.Units is 2^9
	return ring.Set{{Lo: lo << shift, Hi: end<<shift - 1}}
}

// targetsSeen returns every member's target as m computes it from what
// it sees, the inputs [ring.Plan] hands to [ring.Assign].
func targetsSeen(m *Member, now time.Time) map[string]ring.Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	live, peers := m.ringLocked(now)
	claims := map[string]ring.Set{m.cfg.Identity: m.claim}
	for _, p := range peers {
		claims[p.ID] = p.Claim
	}
	return ring.Assign(append(live, m.cfg.Identity), claims)
}

// TestTargetsAgreeWhileAnEarlierIncarnationsClaimCounts: while the claim
// of an earlier incarnation of a member counts (it may still write), a
// peer and the member itself read the same claims and live identities,
// and compute the same targets: the earlier claim keeps others from
// taking, and deals nothing.
func TestTargetsAgreeWhileAnEarlierIncarnationsClaimCounts(t *testing.T) {
	now := time.Now()
	member := func(id string, claim ring.Set, peers map[string]observed) *Member {
		m, err := New(Config{Ring: "platform", Namespace: "ring", Identity: id, LeaseDuration: 6 * time.Second, RenewPeriod: 2 * time.Second, Client: fake.NewClientset()})
		if err != nil {
			t.Fatal(err)
		}
		m.claim, m.peers = claim, peers
		return m
	}
	// a's new incarnation claims nothing yet; its earlier one claimed
	// the last 100 parts. b and c claim theirs; the first 100 parts are
	// no one's (a member that left).
	b, c := parts(100, 300), parts(300, 400)
	earlier := parts(412, 512)
	seenA := observed{id: "a", seen: now, incarnation: "2", prev: earlier, prevUntil: now.Add(3 * time.Second)}
	seenB := observed{id: "b", claim: b, seen: now}
	seenC := observed{id: "c", claim: c, seen: now}
	views := map[string]*Member{
		"a": member("a", nil, map[string]observed{"platform-b": seenB, "platform-c": seenC}),
		"b": member("b", b, map[string]observed{"platform-a": seenA, "platform-c": seenC}),
		"c": member("c", c, map[string]observed{"platform-a": seenA, "platform-b": seenB}),
	}
	want := targetsSeen(views["a"], now)
	for _, id := range []string{"b", "c"} {
		got := targetsSeen(views[id], now)
		for _, x := range []string{"a", "b", "c"} {
			if !got[x].Equal(want[x]) {
				t.Errorf("%s computes %s's target %v; %s itself computes %v", id, x, got[x], "a", want[x])
			}
		}
	}
}
