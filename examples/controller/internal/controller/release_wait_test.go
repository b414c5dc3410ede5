package controller_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// buildsFail is an evaluator whose platform builds fail, while fail is
// set, as they fail when a worker process is killed from outside: a
// transient failure, which says nothing of the platform.
type buildsFail struct {
	platform.Evaluator
	fail atomic.Bool
}

func (k *buildsFail) BuildPlatform(ctx context.Context, dir string) (*kernel.Platform, error) {
	if k.fail.Load() {
		return nil, &isolate.WorkerError{Op: "build", Dir: dir, Err: errors.New("signal: killed")}
	}
	return k.Evaluator.BuildPlatform(ctx, dir)
}

// TestReleaseWaitsForThePlatformGenerationToBeDecided: the Platform
// object's generation is newer than the one the Platform reconciler has
// decided on, as a new leader sees it when its standby had published only
// the one before, and as any leader sees it between a change and its
// publish. A Release then waits: it renders nothing and writes nothing,
// and is written once, against the new generation, after the decision,
// whose notice re-queues it. A generation that fails to build is a
// decision: the Release renders against the generation that serves on.
// So is a publish that fails for a transient reason while an earlier
// generation of the object serves: the Release does not wait for the
// retry, and renders again once it publishes.
func TestReleaseWaitsForThePlatformGenerationToBeDecided(t *testing.T) {
	ctx := context.Background()
	ev := &buildsFail{Evaluator: kernel.New()}
	p := newPlatform(acme(), 1)
	p.UID = "p1"
	f := newFixtureWith(t, ev, true, p)
	var writes atomic.Int32
	f.release.Client = interceptor.NewClient(f.client.(client.WithWatch), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*v1alpha1.Release); ok {
				writes.Add(1)
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	renders := func() uint64 { m := f.pub.Stats().Memo; return m.Hits + m.Misses }

	// waits reconciles the Release before the Platform reconciler has
	// seen generation gen, and wants it to wait: a requeue, no render,
	// no write.
	waits := func(gen int64) {
		t.Helper()
		before, wrote := renders(), writes.Load()
		res, err := f.release.Reconcile(ctx, ctrl.Request{NamespacedName: releaseKey})
		if err != nil || res.RequeueAfter <= 0 {
			t.Fatalf("Reconcile with platform generation %d undecided: %v, %+v; want a requeue", gen, err, res)
		}
		if renders() != before || writes.Load() != wrote {
			t.Fatalf("with platform generation %d undecided, %d render(s) and %d status write(s); want none",
				gen, renders()-before, writes.Load()-wrote)
		}
	}
	// decides reconciles the Platform and wants its error to be terminal,
	// transient or nil, and a notice for the Releases.
	decides := func(gen int64, want string) {
		t.Helper()
		notices := f.changed
		_, _, err := f.reconcilePlatform(t)
		switch got := map[bool]string{true: "terminal", false: "transient"}[errors.Is(err, reconcile.TerminalError(nil))]; {
		case err == nil && want != "nil", err != nil && got != want:
			t.Fatalf("Reconcile of platform generation %d: %v; want %s", gen, err, want)
		}
		if f.changed == notices {
			t.Fatalf("the decision on platform generation %d notified no Release", gen)
		}
	}
	// rendered reconciles the Release and wants it Rendered against
	// platform generation gen, written writes times in all.
	rendered := func(gen int64, wantWrites int32) {
		t.Helper()
		rel := f.reconcileRelease(t)
		wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
		if rel.Status.PlatformGeneration != gen || rel.Status.ObservedGeneration != rel.Generation || writes.Load() != wantWrites {
			t.Fatalf("status %+v after %d status write(s); want generation %d of the release rendered against platform generation %d, %d write(s)",
				rel.Status, writes.Load(), rel.Generation, gen, wantWrites)
		}
	}
	setRelease := func(files map[string]string, gen int64) {
		t.Helper()
		var rel v1alpha1.Release
		if err := f.client.Get(ctx, releaseKey, &rel); err != nil {
			t.Fatal(err)
		}
		rel.Spec.Files, rel.Generation = files, gen
		if err := f.client.Update(ctx, &rel); err != nil {
			t.Fatal(err)
		}
	}

	// Platform generation 2, not yet reconciled; a Release created meanwhile.
	spec := acme()
	spec.Labels["tier"] = "gold"
	f.setSpec(t, spec, 2)
	rel := newRelease(shop("v1.4.0"), 1)
	rel.UID = "r1"
	if err := f.client.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	waits(2)
	decides(2, "nil")
	rendered(2, 1)

	// Generation 3 does not build, while the Release's spec changes.
	broken := spec
	broken.Overlay = "name: \"other\"\n"
	f.setSpec(t, broken, 3)
	files := shop("v1.4.0")
	files["shop.cue"] = strings.Replace(files["shop.cue"], "replicas: 2", "replicas: 3", 1)
	setRelease(files, 2)
	waits(3)
	decides(3, "terminal")
	rendered(2, 2)

	// Generation 4 builds, but its publish fails for now, while the
	// Release's spec changes again.
	ev.fail.Store(true)
	spec.Labels["tier"] = "silver"
	f.setSpec(t, spec, 4)
	files = shop("v1.4.0")
	files["shop.cue"] = strings.Replace(files["shop.cue"], "replicas: 2", "replicas: 4", 1)
	setRelease(files, 3)
	waits(4)
	decides(4, "transient")
	rendered(2, 3)
	// The retry publishes generation 4, and the Release renders again.
	ev.fail.Store(false)
	decides(4, "nil")
	rendered(4, 4)
}

// TestReleaseIsNotReadyWhileThePlatformFailsForNow: the first generation's
// publish fails for a transient reason, so nothing is served. That is a
// decision too: a Release waiting for it is written PlatformNotReady,
// rather than left without a status for as long as the failure keeps
// coming back, and is rendered once the retry publishes.
func TestReleaseIsNotReadyWhileThePlatformFailsForNow(t *testing.T) {
	ctx := context.Background()
	ev := &buildsFail{Evaluator: kernel.New()}
	ev.fail.Store(true)
	p := newPlatform(acme(), 1)
	p.UID = "p1"
	f := newFixtureWith(t, ev, true, p)
	rel := newRelease(shop("v1.4.0"), 1)
	rel.UID = "r1"
	if err := f.client.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	if res, err := f.release.Reconcile(ctx, ctrl.Request{NamespacedName: releaseKey}); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("Reconcile before the platform is reconciled: %v, %+v; want a requeue", err, res)
	}
	for range 3 { // a failure that keeps coming back
		notices := f.changed
		if _, _, err := f.reconcilePlatform(t); err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
			t.Fatalf("Reconcile of a platform whose build fails for now: %v; want a transient error", err)
		}
		if f.changed == notices && notices == 0 {
			t.Fatal("the failed publish notified no Release")
		}
		got := f.reconcileRelease(t)
		wantCondition(t, got.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady)
	}
	ev.fail.Store(false)
	notices := f.changed
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	if f.changed == notices {
		t.Fatal("the publish after the failures notified no Release")
	}
	got := f.reconcileRelease(t)
	wantCondition(t, got.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if got.Status.PlatformGeneration != 1 {
		t.Fatalf("status %+v; want the release rendered against platform generation 1", got.Status)
	}
}
