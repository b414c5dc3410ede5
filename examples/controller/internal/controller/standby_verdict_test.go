package controller

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// A warm standby restarted (a replica of a rolling update) follows a
// Release whose status holds a failure for its current inputs, written by
// the leader: it does not evaluate the spec, as the leader's Release
// reconciler would not, and counts the Release as current.
func TestStandbyKeepsAVerdictTheStatusHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"past the time budget", &isolate.BudgetError{Op: "render", Dir: "shop", Budget: "time", Value: int64(time.Second)}},
		{"the spec's problems", &kernel.Error{Op: "render", Dir: "shop", Problems: []kernel.Problem{{Message: "conflicting values"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ev := renderFails{kernel.New(), tc.err}
			rel := standbyRelease("r1")
			leader, c := followed(t, ev, rel)
			key := client.ObjectKeyFromObject(rel)
			sk := &StatusKey{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: "default", Name: DefaultStatusKeyName}}
			if err := sk.Load(ctx); err != nil {
				t.Fatal(err)
			}
			lr := &ReleaseReconciler{Client: c, Publisher: leader.pub, Evaluator: ev, Recorder: events.NewFakeRecorder(10), Key: sk}
			if _, err := lr.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Fatal(err)
			}
			var stored v1alpha1.Release
			if err := c.Get(ctx, key, &stored); err != nil {
				t.Fatal(err)
			}
			if cond := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ReleaseRendered); cond == nil || cond.Reason != v1alpha1.ReasonRenderFailed {
				t.Fatalf("the leader's verdict: %+v, want RenderFailed", cond)
			}

			s := followOn(t, c, ev)
			s.release = &ReleaseReconciler{Client: c, Publisher: s.pub, Evaluator: ev, Recorder: events.NewFakeRecorder(10), Key: sk}
			if _, err := s.reconcileRelease(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if current, renders := s.Rendered(); current != 1 || renders != 0 {
				t.Fatalf("Rendered() = %d current, %d renders; want 1 and none: the status holds the verdict", current, renders)
			}
			var after v1alpha1.Release
			if err := c.Get(ctx, key, &after); err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != stored.ResourceVersion {
				t.Fatal("the standby wrote the Release")
			}
		})
	}
}

// followOn returns a Standby, not elected, on c, that has followed the
// Platform c holds into a booted Publisher of its own evaluating with ev.
func followOn(t *testing.T, c client.Client, ev platform.Evaluator) *Standby {
	t.Helper()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true, Evaluator: ev})
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	s := &Standby{client: c, pub: pub, elected: make(chan struct{}), booted: func() bool { return true }, notify: func() {}}
	if _, err := s.reconcilePlatform(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.PlatformName}}); err != nil {
		t.Fatal(err)
	}
	if pub.Store().Generation() == 0 {
		t.Fatal("the standby serves nothing")
	}
	return s
}
