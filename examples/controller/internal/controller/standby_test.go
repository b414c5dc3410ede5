package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

func TestWarmPublisherRunsOnEveryReplica(t *testing.T) {
	if (&electedOnly{warm: true}).NeedLeaderElection() {
		t.Fatal("a warm Publisher would wait for the election")
	}
}

// A warm standby follows the Platform into its own Publisher and renders a
// Release into the memo, writing no status; it is ready once caught up
// with the Platform it sees, and not before.
func TestStandbyFollowsAndRendersWritingNothing(t *testing.T) {
	ctx := context.Background()
	const web = "example.com/catalogs/web@v1"
	p := &v1alpha1.Platform{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PlatformName, Generation: 3, UID: "u1"},
		Spec: v1alpha1.PlatformSpec{Name: "acme", SkewPolicy: v1alpha1.SkewWarn,
			Catalogs: []v1alpha1.Catalog{{Path: web, Version: "v1.4.0", Kinds: []string{"Deployment"}}}},
	}
	rel := &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop", Generation: 1},
		Spec: v1alpha1.ReleaseSpec{Files: map[string]string{
			"cue.mod/module.cue": "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
			"shop.cue": "package shop\n\nname: \"shop\"\nrequires: \"" + web + "\": \"v1.4.0\"\n" +
				"components: web: {kind: \"Deployment\", catalog: \"" + web + "\", replicas: 2, spec: {image: \"shop:1\", port: 8080}}\n",
		}},
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(p, rel).
		WithStatusSubresource(&v1alpha1.Platform{}, &v1alpha1.Release{}).Build()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true, Evaluator: kernel.New()})
	run := &electedOnly{pub: pub, warm: true}
	elected := make(chan struct{})
	notices := 0
	s := &Standby{client: c, pub: pub, elected: elected, booted: run.booted.Load, notify: func() { notices++ }}
	w := &Wiring{Publisher: pub, Standby: s, runnable: run, elected: elected}

	if err := w.Ready(nil); err == nil || !strings.Contains(err.Error(), "not booted") {
		t.Fatalf("a standby not booted: Ready = %v, want not booted", err)
	}
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	run.booted.Store(true)
	if err := w.Ready(nil); err == nil || !strings.Contains(err.Error(), "generation 3 not yet published") {
		t.Fatalf("a standby behind the Platform: Ready = %v, want generation 3 not yet published", err)
	}
	if _, err := s.reconcilePlatform(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.PlatformName}}); err != nil {
		t.Fatal(err)
	}
	if g := pub.Store().Generation(); g != 3 || notices != 1 {
		t.Fatalf("after following: serves %d with %d notices, want 3 and 1", g, notices)
	}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("a standby caught up: Ready = %v", err)
	}

	key := client.ObjectKeyFromObject(rel)
	for range 2 { // the second finds the render done against this platform
		if _, err := s.reconcileRelease(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if cur, renders := s.Rendered(); cur != 1 || renders != 1 {
		t.Fatalf("Rendered() = %d current, %d renders; want 1 and 1", cur, renders)
	}
	var got v1alpha1.Release
	if err := c.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	var gotP v1alpha1.Platform
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), &gotP); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 || len(gotP.Status.Conditions) != 0 {
		t.Fatalf("the standby wrote status: release %+v, platform %+v", got.Status, gotP.Status)
	}

	// Elected, its Release reconciler finds the render in the memo.
	before := pub.Stats().Memo
	r := &ReleaseReconciler{Client: c, Publisher: pub, Recorder: events.NewFakeRecorder(10)}
	close(elected)
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	after := pub.Stats().Memo
	if after.Misses != before.Misses || after.Hits != before.Hits+1 {
		t.Fatalf("the elected reconciler's render: memo %+v then %+v, want one hit and no miss", before, after)
	}
	if _, err := s.reconcileRelease(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if _, renders := s.Rendered(); renders != 1 {
		t.Fatalf("the standby rendered on the leader: %d renders", renders)
	}
}
