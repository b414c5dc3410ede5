package controller_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform/isolate"
)

// TestMain serves as a kernel worker when the Workers of a test start this
// binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}

// bomb is an instance module of a few bytes whose evaluation never ends
// on any machine (ten billion steps) and holds little memory while it
// runs, so that with the memory budget out of its reach only the time
// budget stops it.
func bomb() map[string]string {
	files := shop("v1.4.0")
	files["shop.cue"] = "package shop\n\nimport \"list\"\n\nname: \"shop\"\nrequires: \"" + webPath + "\": \"v1.4.0\"\n" +
		"r: list.Range(0, 100000, 1)\nx: [for i in r for j in r if i < 0 {i}]\n"
	return files
}

// bombFixture returns a fixture whose Release is a bomb, its Platform
// reconciled, rendering in one worker with the time budget timeout and a
// memory budget out of the bomb's reach; the worker is closed when t ends.
func bombFixture(t *testing.T, timeout time.Duration) (*fixture, *isolate.Workers) {
	t.Helper()
	ws := &isolate.Workers{Size: 1, Timeout: timeout, Memory: 8 << 30}
	t.Cleanup(func() { _ = ws.Close() })
	f := newFixtureWith(t, ws, true, newPlatform(acme(), 1), newRelease(bomb(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	return f, ws
}

// TestReleaseOverBudgetIsNotRetried: a Release whose render is killed past
// the time budget gets RenderFailed naming the budget and a terminal
// error; the same spec is not rendered again against a new platform; a
// changed spec is.
func TestReleaseOverBudgetIsNotRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a time budget")
	}
	f, ws := bombFixture(t, budget)
	reconcileOnce := func() (*v1alpha1.Release, error) {
		_, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
		var rel v1alpha1.Release
		if gerr := f.client.Get(context.Background(), releaseKey, &rel); gerr != nil {
			t.Fatal(gerr)
		}
		return &rel, err
	}
	rel, err := reconcileOnce()
	if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, isolate.ErrBudget) {
		t.Fatalf("Reconcile: %v, want a terminal error wrapping the budget's", err)
	}
	c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if !strings.Contains(c.Message, "time budget of "+budget.String()) {
		t.Fatalf("RenderFailed message %q does not name the time budget", c.Message)
	}

	next := acme()
	next.Catalogs[0].Version = "v1.5.0"
	f.setSpec(t, next, 2)
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	if rel, err = reconcileOnce(); err != nil || rel.Status.PlatformGeneration != 1 {
		t.Fatalf("the same spec against a new platform: %v, rendered against %d; want no render", err, rel.Status.PlatformGeneration)
	}
	if s := ws.Stats(); s.KilledTime != 1 {
		t.Fatalf("stats %+v: the spec over budget was rendered again", s)
	}

	rel.Spec.Files = shop("v1.4.0")
	rel.Generation++ // as the API server counts a spec change
	if err := f.client.Update(context.Background(), rel); err != nil {
		t.Fatal(err)
	}
	if rel, err = reconcileOnce(); err != nil {
		t.Fatal(err)
	}
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
}
