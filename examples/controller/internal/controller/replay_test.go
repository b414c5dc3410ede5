package controller

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform/kernel"
)

// statusPredicate is the predicate Setup passes a Release's status
// updates through, for the Release reconciler r.
func statusPredicate(r *ReleaseReconciler) predicate.Funcs { return notTheVerdict(r) }

// A signed verdict the controller made once, written back by someone else
// (a replay of an earlier status of the same Release: another spec
// generation, another platform), is a forgery: its MAC verifies, but it is
// not the verdict that holds now. Its update is reconciled at once, as an
// unsigned forgery's is, and the reconcile writes the verdict that holds;
// the controller's own write of that verdict is not reconciled again.
func TestReleaseReplayedVerdictIsReconciled(t *testing.T) {
	ctx := context.Background()
	rel := standbyRelease("r1")
	s, c := followed(t, kernel.New(), rel)
	key := client.ObjectKeyFromObject(rel)
	sk := &StatusKey{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: "default", Name: DefaultStatusKeyName}}
	if err := sk.Load(ctx); err != nil {
		t.Fatal(err)
	}
	r := &ReleaseReconciler{Client: c, Publisher: s.pub, Evaluator: kernel.New(), Recorder: events.NewFakeRecorder(100), Key: sk}
	get := func() *v1alpha1.Release {
		t.Helper()
		var got v1alpha1.Release
		if err := c.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	reconcileOnce := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}

	reconcileOnce()
	first := get()
	if c := meta.FindStatusCondition(first.Status.Conditions, v1alpha1.ReleaseRendered); c == nil || c.Reason != v1alpha1.ReasonRendered || first.Status.MAC == "" {
		t.Fatalf("the first verdict: %+v; want Rendered, signed", first.Status)
	}

	// A new spec that fails: the verdict that holds is now RenderFailed.
	next := first.DeepCopy()
	next.Spec.Files["shop.cue"] += "components: web: replicas: \"two\"\n"
	next.Generation = 2
	if err := c.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	reconcileOnce()
	second := get()
	if c := meta.FindStatusCondition(second.Status.Conditions, v1alpha1.ReleaseRendered); c == nil || c.Reason != v1alpha1.ReasonRenderFailed || second.Generation != 2 {
		t.Fatalf("the second verdict, of generation %d: %+v; want RenderFailed for generation 2", second.Generation, second.Status)
	}

	pred := statusPredicate(r)
	if pred.Update(event.UpdateEvent{ObjectOld: first, ObjectNew: second}) {
		t.Error("the controller's own write of the verdict that holds passes the predicate: every write would be reconciled again")
	}

	// The first verdict written back over the second.
	replayed := second.DeepCopy()
	first.Status.DeepCopyInto(&replayed.Status)
	if !sk.Verify(replayed.UID, &replayed.Status, meta.FindStatusCondition(replayed.Status.Conditions, v1alpha1.ReleaseRendered)) {
		t.Fatal("the replayed verdict does not verify: the test replays nothing the controller signed")
	}
	if err := c.Status().Update(ctx, replayed); err != nil {
		t.Fatal(err)
	}
	replayed = get()
	if !pred.Update(event.UpdateEvent{ObjectOld: second, ObjectNew: replayed}) {
		t.Error("a verdict replayed from an earlier generation does not pass the predicate: it stands, Rendered, until some other event reconciles the Release")
	}
	reconcileOnce()
	if after := get(); after.Status.MAC != second.Status.MAC {
		t.Errorf("after the replay's reconcile: %+v; want the verdict that holds, %+v", after.Status, second.Status)
	}
}
