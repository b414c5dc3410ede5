package controller_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"leasekit.dev/examples/controller/api/v1alpha1"
)

var releaseKey = types.NamespacedName{Namespace: "shop", Name: "shop"}

func newRelease(files map[string]string, generation int64) *v1alpha1.Release {
	return &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: releaseKey.Namespace, Name: releaseKey.Name, Generation: generation},
		Spec:       v1alpha1.ReleaseSpec{Files: files},
	}
}

func (f *fixture) reconcileRelease(t *testing.T) *v1alpha1.Release {
	t.Helper()
	res, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
	if err != nil || !res.IsZero() {
		t.Fatalf("Reconcile release: %v, %+v", err, res)
	}
	var rel v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &rel); err != nil {
		t.Fatal(err)
	}
	return &rel
}

func TestReleaseWaitsForThePlatform(t *testing.T) {
	f := newFixture(t, true, newRelease(shop("v1.4.0"), 1))
	rel := f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady)
	if rel.Status.PlatformGeneration != 0 || len(rel.Status.Resources) != 0 {
		t.Fatalf("status %+v before any platform", rel.Status)
	}

	if err := f.client.Create(context.Background(), newPlatform(acme(), 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	f.drain()
	rel = f.reconcileRelease(t)
	c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if rel.Status.PlatformGeneration != 1 || rel.Status.Instance != "shop" || rel.Status.ObservedGeneration != 1 {
		t.Fatalf("status %+v, want shop rendered against generation 1", rel.Status)
	}
	want := []v1alpha1.RenderedResource{{Component: "svc", Kind: "Service", Name: "svc"}, {Component: "web", Kind: "Deployment", Name: "web"}}
	if len(rel.Status.Resources) != 2 || rel.Status.Resources[0].Component != want[0].Component || rel.Status.Resources[1].Kind != want[1].Kind {
		t.Fatalf("resources %+v, want %+v", rel.Status.Resources, want)
	}
	if !strings.Contains(c.Message, "against platform generation 1") {
		t.Fatalf("Rendered message %q", c.Message)
	}
	if ev := f.drain(); len(ev) != 1 || !strings.Contains(ev[0], "Normal Rendered") {
		t.Fatalf("events %q, want one Normal Rendered", ev)
	}

	// Up to date: no render, no write, no event.
	again := f.reconcileRelease(t)
	if again.ResourceVersion != rel.ResourceVersion || len(f.drain()) != 0 {
		t.Fatal("an up-to-date release was rendered and written again")
	}
}

func TestReleaseSkewWarnsUnderWarn(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1), newRelease(shop("v1.9.0"), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if len(rel.Status.Diagnostics) != 1 || !strings.Contains(rel.Status.Diagnostics[0], "warning") {
		t.Fatalf("diagnostics %q, want one skew warning", rel.Status.Diagnostics)
	}
}

func TestReleaseSkewRefusedUnderRefuse(t *testing.T) {
	spec := acme()
	spec.SkewPolicy = v1alpha1.SkewRefuse
	f := newFixture(t, true, newPlatform(spec, 1), newRelease(shop("v1.9.0"), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if !strings.Contains(c.Message, webPath) || !strings.Contains(c.Message, "v1.9.0") || !strings.Contains(c.Message, "v1.4.0") {
		t.Fatalf("RenderFailed message %q does not name the catalog and both versions", c.Message)
	}
	if ev := f.drain(); len(ev) == 0 || !strings.Contains(ev[len(ev)-1], "Warning RenderFailed") {
		t.Fatalf("events %q, want a Warning RenderFailed last", ev)
	}
}

func TestReleaseBrokenInstanceHasPositions(t *testing.T) {
	files := shop("v1.4.0")
	files["shop.cue"] += "components: web: replicas: \"two\"\n"
	f := newFixture(t, true, newPlatform(acme(), 1), newRelease(files, 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if !strings.Contains(c.Message, "shop.cue:") {
		t.Fatalf("RenderFailed message %q lacks a position in shop.cue", c.Message)
	}
	if rel.Status.PlatformGeneration != 1 {
		t.Fatalf("platform generation %d, want 1", rel.Status.PlatformGeneration)
	}
}

func TestReleaseRendersAgainForANewPlatform(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1), newRelease(shop("v1.4.0"), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	f.reconcileRelease(t)
	next := acme()
	next.Catalogs[0].Version = "v1.5.0"
	f.setSpec(t, next, 2)
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	if rel.Status.PlatformGeneration != 2 {
		t.Fatalf("platform generation %d after a new platform, want 2", rel.Status.PlatformGeneration)
	}

	// The platform deleted: the release says so.
	if err := f.client.Delete(context.Background(), newPlatform(acme(), 2)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel = f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady)
	if rel.Status.PlatformGeneration != 0 || rel.Status.Resources != nil {
		t.Fatalf("status %+v after the platform's delete", rel.Status)
	}
}

func TestReleaseHostileFileNamesRefused(t *testing.T) {
	for _, name := range []string{"../escape.cue", "/etc/shop.cue", "cue.mod/../../x.cue"} {
		t.Run(name, func(t *testing.T) {
			files := shop("v1.4.0")
			files[name] = "package shop\n"
			f := newFixture(t, true, newPlatform(acme(), 1), newRelease(files, 1))
			if _, _, err := f.reconcilePlatform(t); err != nil {
				t.Fatal(err)
			}
			rel := f.reconcileRelease(t)
			c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
			if !strings.Contains(c.Message, name) {
				t.Fatalf("RenderFailed message %q does not name %q", c.Message, name)
			}
			t.Log(c.Message)
		})
	}
}

// A Platform deleted and created again, seen as one request, is published
// at the same generation number with new content. Every Release renders
// again against the new content, though the number it recorded matches.
func TestReleaseRendersAgainWhenARecreatedPlatformReusesTheGeneration(t *testing.T) {
	first := newPlatform(acme(), 1)
	first.UID = "first"
	f := newFixture(t, true, first, newRelease(shop("v1.4.0"), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if len(rel.Status.Diagnostics) != 0 {
		t.Fatalf("diagnostics %q against web v1.4.0, want none", rel.Status.Diagnostics)
	}

	if err := f.client.Delete(context.Background(), newPlatform(acme(), 1)); err != nil {
		t.Fatal(err)
	}
	older := acme()
	older.Catalogs[0].Version = "v1.2.0"
	again := newPlatform(older, 1)
	again.UID = "second"
	if err := f.client.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	if g := f.pub.Store().Generation(); g != 1 {
		t.Fatalf("store serves %d, want the new object's generation 1", g)
	}
	rel = f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if len(rel.Status.Diagnostics) != 1 || !strings.Contains(rel.Status.Diagnostics[0], "v1.2.0") {
		t.Fatalf("diagnostics %q, want the skew warning of the new platform's web v1.2.0", rel.Status.Diagnostics)
	}
}
