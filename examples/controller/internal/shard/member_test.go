package shard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/examples/controller/internal/shard"
)

// TestDeletedLeaseCountsUntilItExpires: a member's Lease deleted by hand
// still counts, its claim with it, until a lease duration after it was
// last seen, so no peer takes the part its holder may still write for;
// and a clean leave publishes an empty claim before it deletes.
func TestDeletedLeaseCountsUntilItExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lg := newCluster(), &logs{}
		a, b := start(t, c, lg, "a"), start(t, c, lg, "b")
		covered(t, 3*testLease, a, b)
		for _, r := range []*running{a, b} {
			if err := r.m.Ready(nil); err != nil {
				t.Errorf("%s is not ready in a stable ring: %v", r.id, err)
			}
		}
		watchWriters(t, testRenew, a, b) // both have written since
		if err := c.cs.CoordinationV1().Leases(testNS).Delete(context.Background(), testRing+"-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		watchWriters(t, 2*testLease, a, b)
		covered(t, 2*testLease, a, b)

		if err := b.end(); err != nil {
			t.Fatalf("b: %v", err)
		}
		ws := c.writesOf(testRing + "-b")
		if last := ws[len(ws)-1]; last.Annotations[shard.ClaimAnnotation] != "" {
			t.Errorf("b's last write before it deleted its Lease claims %q, want the empty claim", last.Annotations[shard.ClaimAnnotation])
		}
		if got := lg.with(testRing+"-a", "LeaseDeleted"); len(got) == 0 {
			t.Error("b did not report a's Lease deleted")
		}
		if _, err := c.cs.CoordinationV1().Leases(testNS).Get(context.Background(), testRing+"-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("b's Lease after a clean leave: %v, want it deleted", err)
		}
		covered(t, 2*testRenew, a)
		if err := a.end(); err != nil {
			t.Fatalf("a: %v", err)
		}
	})
}

// TestSecondIncarnationWaits: a second replica with an identity a live
// one holds writes for nothing while the first holds its Lease, and both
// say so; once the first is gone (crashed: its Lease left to expire) the
// second takes over.
func TestSecondIncarnationWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lg := newCluster(), &logs{}
		a1, b := start(t, c, lg, "a"), start(t, c, lg, "b")
		covered(t, 3*testLease, a1, b)
		a2 := start(t, c, lg, "a")
		a1.id, a2.id = "a (first)", "a (second)"
		watchWriters(t, 4*testLease, a1, a2, b)
		if w := a2.m.Status().Writing; !w.Empty() {
			t.Errorf("the second incarnation writes for %v while the first holds the Lease", w)
		}
		if s := a2.m.Status(); s.Waiting == "" {
			t.Errorf("the second incarnation's status does not say it waits: %+v", s)
		}
		if err := a2.m.Ready(nil); err == nil {
			t.Error("the second incarnation is ready while it waits")
		}
		if err := a1.m.Ready(nil); err != nil {
			t.Errorf("the first incarnation is not ready: %v", err)
		}
		for _, reason := range []string{"IncarnationWaiting", "IncarnationContended"} {
			if got := lg.with(reason); len(got) == 0 {
				t.Errorf("no log line says %s", reason)
			}
		}
		a1.m.Abandon()
		if err := a1.end(); err != nil {
			t.Fatalf("the first incarnation: %v", err)
		}
		covered(t, testLease+4*testRenew, a2, b)
		watchWriters(t, testLease, a2, b)
		for _, r := range []*running{a2, b} {
			if err := r.end(); err != nil {
				t.Fatalf("%s: %v", r.id, err)
			}
		}
	})
}

// TestForbiddenLeasesFailStart: a member whose Leases RBAC refuses fails
// Start within its first renew period, with an error that names the
// refusal: the verb, the resource and the namespace.
func TestForbiddenLeasesFailStart(t *testing.T) {
	for _, verb := range []string{"list", "watch", "create"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, lg := newCluster(), &logs{}
				c.setFault(func(v, name string) error {
					if v == verb {
						return apierrors.NewForbidden(leasesGVR.GroupResource(), name, errors.New(`User "system:serviceaccount:ring:controller" cannot `+verb+` resource "leases"`))
					}
					return nil
				})
				a := start(t, c, lg, "a")
				select {
				case <-a.done:
				case <-time.After(testRenew):
					a.stop()
					t.Fatalf("Start has not failed after a renew period (%v)", testRenew)
				}
				err := a.err
				if err == nil {
					t.Fatal("Start returned nil")
				}
				for _, w := range []string{verb, "leases", testNS} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Start's error %q does not name %q", err, w)
					}
				}
				if !apierrors.IsForbidden(err) {
					t.Errorf("Start's error %q is not the API server's Forbidden", err)
				}
				if rerr := a.m.Ready(nil); rerr == nil || !strings.Contains(rerr.Error(), verb) {
					t.Errorf("Ready after Start failed: %v, want the refusal", rerr)
				}
			})
		})
	}
}

// TestHandMadeLeasesAreBounded: a hand-made Lease that announces a huge
// duration, or is not the ring's shape, delays no member beyond its own
// lease duration.
func TestHandMadeLeasesAreBounded(t *testing.T) {
	half := ring.Set{{Lo: 0, Hi: 1<<63 - 1}}.String()
	for _, tc := range []struct{ name, holder, claim, reason string }{
		{"huge-duration", "x", half, "LeaseDuration"},
		{"claim-unreadable", "x", "not a claim", "ForeignLease"},
		{"holder-not-its-name", "y", half, "ForeignLease"},
		{"no-holder", "", half, "ForeignLease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, lg := newCluster(), &logs{}
				c.handMade(t, testRing+"-x", tc.holder, tc.claim, 1<<30)
				a := start(t, c, lg, "a")
				covered(t, testLease+3*testRenew, a)
				if got := lg.with(testRing+"-x", tc.reason); len(got) == 0 {
					t.Errorf("no log line reports the Lease with %s", tc.reason)
				}
				if err := a.end(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestNewcomerTakesNothingForALeaseDuration: a member that starts after
// a Lease was deleted by hand, and so never saw it, takes nothing until
// the deleted Lease's holder has stopped writing.
func TestNewcomerTakesNothingForALeaseDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lg := newCluster(), &logs{}
		a := start(t, c, lg, "a")
		covered(t, 3*testLease, a)
		// Right after a renewal, so that a writes on for a renew period.
		for n := len(c.writesOf(testRing + "-a")); len(c.writesOf(testRing+"-a")) == n; {
			time.Sleep(time.Millisecond)
		}
		if err := c.cs.CoordinationV1().Leases(testNS).Delete(context.Background(), testRing+"-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b := start(t, c, lg, "b")
		watchWriters(t, 2*testLease, a, b)
		covered(t, 2*testLease, a, b)
	})
}

// TestJoinOutlastsServerErrors: a join whose requests fail (500s) tries
// again, and Start does not fail.
func TestJoinOutlastsServerErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lg := newCluster(), &logs{}
		failures := 0
		c.setFault(func(verb, _ string) error {
			if (verb == "create" || verb == "get") && failures < 4 {
				failures++
				return apierrors.NewInternalError(errors.New("etcd is slow"))
			}
			return nil
		})
		a := start(t, c, lg, "a")
		covered(t, 3*testLease, a)
		select {
		case <-a.done:
			t.Fatalf("Start returned %v after server errors", a.err)
		default:
		}
	})
}

// TestWaitingIncarnationCountsTheFirstsClaimOnceItsLeaseIsDeleted: a
// second incarnation waiting for the first's Lease, and a lease duration
// into its watch, finds the Lease deleted by hand and creates its own;
// the first writes on until its next renewal finds that out, so the
// second must count the claim it saw on the first's Lease as a peer's
// would, until a lease duration after it last saw it.
func TestWaitingIncarnationCountsTheFirstsClaimOnceItsLeaseIsDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, lg := newCluster(), &logs{}
		a1 := start(t, c, lg, "a")
		covered(t, 3*testLease, a1)
		renewed := func() {
			for n := len(c.writesOf(testRing + "-a")); len(c.writesOf(testRing+"-a")) == n; {
				time.Sleep(time.Millisecond)
			}
		}
		// Half a renew period after a1's renewals, so that a2 tries
		// its Lease again half a renew period before a1 renews it.
		renewed()
		time.Sleep(testRenew / 2)
		a2 := start(t, c, lg, "a")
		a1.id, a2.id = "a (first)", "a (second)"
		watchWriters(t, 2*testLease, a1, a2)
		renewed()
		if err := c.cs.CoordinationV1().Leases(testNS).Delete(context.Background(), testRing+"-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		watchWriters(t, 2*testLease, a1, a2)
		covered(t, testLease, a2)
	})
}
