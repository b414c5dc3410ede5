package shard

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"leasekit.dev/examples/controller/internal/ring"
)

// A peer's Lease seen here only at a version that claimed nothing (a
// cache that lagged), then renewed with a claim unseen and deleted by
// hand: its holder may still write for that claim. A member that judged
// it expired as seen must not take the space when the validating read no
// longer holds the Lease, nor drop the peer when its cache finds it gone
// by a relist; both count it for everything until its deletion is seen
// and a lease duration has passed.
func TestALeaseDeletedUnseenCountsForEverything(t *testing.T) {
	now := time.Now()
	newMember := func() *Member {
		m, err := New(Config{Ring: "platform", Namespace: "ring", Identity: "b", LeaseDuration: 6 * time.Second, RenewPeriod: 2 * time.Second, Client: fake.NewClientset()})
		if err != nil {
			t.Fatal(err)
		}
		m.lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: "ring", ResourceVersion: "5"}}
		return m
	}
	seenEmpty := func(seen time.Time) observed {
		return observed{id: "a", rv: "1", seen: seen, incarnation: "1"}
	}

	t.Run("take", func(t *testing.T) {
		m := newMember()
		m.peers = map[string]observed{"platform-a": seenEmpty(now.Add(-time.Minute))} // expired as seen
		m.mu.Lock()
		others, mine := m.countsLocked([]coordinationv1.Lease{*m.lease}, now)
		m.mu.Unlock()
		if !mine {
			t.Fatal("the read holds this member's Lease as published, and countsLocked says it does not")
		}
		if valid := ring.Validate(ring.Full(), others); !valid.Empty() {
			t.Fatalf("a take of everything validates %v against a Lease deleted and not yet seen deleted, want nothing", valid)
		}
	})

	t.Run("relist", func(t *testing.T) {
		m := newMember()
		m.peers = map[string]observed{"platform-a": seenEmpty(now)}
		gone := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "platform-a", Namespace: "ring", ResourceVersion: "1"}}
		m.observe(logr.Discard(), toolscache.DeletedFinalStateUnknown{Key: "ring/platform-a", Obj: gone}, true)
		p, ok := m.peers["platform-a"]
		if !ok || !p.deleted || !p.claim.Equal(ring.Full()) {
			t.Fatalf("after a relist found the Lease gone, the peer is %+v (kept %v), want it kept, seen deleted, claiming everything", p, ok)
		}
		m.mu.Lock()
		others, _ := m.countsLocked([]coordinationv1.Lease{*m.lease}, time.Now())
		m.mu.Unlock()
		if valid := ring.Validate(ring.Full(), others); !valid.Empty() {
			t.Fatalf("a take of everything validates %v within a lease duration of the deletion seen, want nothing", valid)
		}
		m.mu.Lock()
		others, _ = m.countsLocked([]coordinationv1.Lease{*m.lease}, p.seen.Add(m.cfg.LeaseDuration))
		m.mu.Unlock()
		if valid := ring.Validate(ring.Full(), others); !valid.Equal(ring.Full()) {
			t.Fatalf("a lease duration after the deletion was seen, a take of everything validates %v, want everything", valid)
		}
	})
}
