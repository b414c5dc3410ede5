package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

func TestWarmPublisherRunsOnEveryReplica(t *testing.T) {
	if (&electedOnly{warm: true}).NeedLeaderElection() {
		t.Fatal("a warm Publisher would wait for the election")
	}
}

// standbyWeb is the catalog the standby tests' Platform carries.
const standbyWeb = "example.com/catalogs/web@v1"

// standbyPlatform returns the standby tests' Platform, at generation 3.
func standbyPlatform() *v1alpha1.Platform {
	return &v1alpha1.Platform{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PlatformName, Generation: 3, UID: "u1"},
		Spec: v1alpha1.PlatformSpec{Name: "acme", SkewPolicy: v1alpha1.SkewWarn,
			Catalogs: []v1alpha1.Catalog{{Path: standbyWeb, Version: "v1.4.0", Kinds: []string{"Deployment"}}}},
	}
}

// standbyRelease returns the standby tests' Release, object uid at
// generation 1, which renders against standbyPlatform.
func standbyRelease(uid types.UID) *v1alpha1.Release {
	return &v1alpha1.Release{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shop", Generation: 1, UID: uid},
		Spec: v1alpha1.ReleaseSpec{Files: map[string]string{
			"cue.mod/module.cue": "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
			"shop.cue": "package shop\n\nname: \"shop\"\nrequires: \"" + standbyWeb + "\": \"v1.4.0\"\n" +
				"components: web: {kind: \"Deployment\", catalog: \"" + standbyWeb + "\", replicas: 2, spec: {image: \"shop:1\", port: 8080}}\n",
		}},
	}
}

// A warm standby follows the Platform into its own Publisher and renders a
// Release into the memo, writing no status; it is ready once caught up
// with the Platform it sees, and not before.
func TestStandbyFollowsAndRendersWritingNothing(t *testing.T) {
	ctx := context.Background()
	p, rel := standbyPlatform(), standbyRelease("r1")
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

// renderFails is the kernel with every render failing with err.
type renderFails struct {
	*kernel.Kernel
	err error
}

func (r renderFails) Render(context.Context, kernel.RenderInput) (kernel.RenderOutput, error) {
	return kernel.RenderOutput{}, r.err
}

// followed returns a Standby, not elected, that has followed
// standbyPlatform into a booted Publisher evaluating with ev, over a
// fake client holding objs and the Platform.
func followed(t *testing.T, ev platform.Evaluator, objs ...client.Object) (*Standby, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme)) // the status key's Secret
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, standbyPlatform())...).
		WithStatusSubresource(&v1alpha1.Platform{}, &v1alpha1.Release{}).Build()
	s := followOn(t, c, ev)
	if g := s.pub.Store().Generation(); g != 3 {
		t.Fatalf("the standby serves generation %d, want 3", g)
	}
	return s, c
}

// A standby classifies a render's failure as the ReleaseReconciler does:
// a failure that says nothing of the spec is retried and recorded as
// nothing, so the render is tried again and reaches the memo; a refusal
// or a budget is recorded, and not rendered again against this platform.
func TestStandbyClassifiesRenderFailuresAsTheLeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		retry bool
	}{
		{"the platform's directory changed", &kernel.ContentError{Dir: "gen-3", Want: "sha256:a", Got: "sha256:b"}, true},
		{"a worker died", &isolate.WorkerError{Op: "render", Dir: "shop", Err: errors.New("signal: killed")}, true},
		{"the workers closed", fmt.Errorf("render: %w", isolate.ErrClosed), true},
		{"the evaluation's deadline", fmt.Errorf("render: %w", context.DeadlineExceeded), true},
		{"past the time budget", &isolate.BudgetError{Op: "render", Dir: "shop", Budget: "time", Value: int64(time.Second)}, false},
		{"the spec's problems", &kernel.Error{Op: "render", Dir: "shop", Problems: []kernel.Problem{{Message: "conflicting values"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := standbyRelease("r1")
			s, _ := followed(t, renderFails{kernel.New(), tc.err}, rel)
			req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rel)}
			_, err := s.reconcileRelease(context.Background(), req)
			if got := err != nil; got != tc.retry {
				t.Fatalf("reconcileRelease = %v; want retried: %v", err, tc.retry)
			}
			current, renders := s.Rendered()
			if want := map[bool]int{true: 0, false: 1}[tc.retry]; current != want || renders != 1 {
				t.Fatalf("Rendered() = %d current, %d renders; want %d and 1", current, renders, want)
			}
			if _, err := s.reconcileRelease(context.Background(), req); (err != nil) != tc.retry {
				t.Fatalf("reconcileRelease again = %v; want retried: %v", err, tc.retry)
			}
			if _, renders := s.Rendered(); renders != map[bool]int{true: 2, false: 1}[tc.retry] {
				t.Fatalf("after a second reconcile: %d renders; a failure recorded is not rendered again, one retried is", renders)
			}
		})
	}
}

// A Release deleted and created again under the same name starts at
// generation 1 again: the standby renders the new object, as the leader
// keys its verdicts by UID and generation.
func TestStandbyRendersAReleaseCreatedAgain(t *testing.T) {
	ctx := context.Background()
	old := standbyRelease("r1")
	s, c := followed(t, kernel.New(), old)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(old)}
	if _, err := s.reconcileRelease(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	again := standbyRelease("r2")
	again.Spec.Files["shop.cue"] = strings.Replace(again.Spec.Files["shop.cue"], "replicas: 2", "replicas: 3", 1)
	// Created again before the standby saw the delete: the same name, the
	// same generation, another object.
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.Release
	if err := c.Get(ctx, req.NamespacedName, &got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != old.Generation || got.UID == old.UID {
		t.Fatalf("the object created again: generation %d, uid %q; the test needs generation %d and another uid", got.Generation, got.UID, old.Generation)
	}
	if _, err := s.reconcileRelease(ctx, req); err != nil {
		t.Fatal(err)
	}
	if cur, renders := s.Rendered(); cur != 1 || renders != 2 {
		t.Fatalf("Rendered() = %d current, %d renders; want 1 and 2 (the new object rendered)", cur, renders)
	}
}

// replica is a Standby, not elected, and the Platform and Release
// reconcilers of the same process, sharing its booted Publisher, over a
// fake client; notices counts the Platform reconciler's notices to the
// Releases, and elect elects the replica.
type replica struct {
	s       *Standby
	pr      *PlatformReconciler
	rr      *ReleaseReconciler
	c       client.Client
	notices int
	elect   func()
}

func newReplica(t *testing.T, objs ...client.Object) *replica {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.Platform{}, &v1alpha1.Release{}).Build()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true, Evaluator: kernel.New()})
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	elected := make(chan struct{})
	r := &replica{c: c, elect: func() { close(elected) }}
	r.pr = &PlatformReconciler{Client: c, Publisher: pub, Recorder: events.NewFakeRecorder(10), Changed: func() { r.notices++ }}
	r.rr = &ReleaseReconciler{Client: c, Publisher: pub, Recorder: events.NewFakeRecorder(10), Platforms: r.pr}
	r.s = &Standby{client: c, pub: pub, elected: elected, booted: func() bool { return true }, notify: func() {}, platforms: r.pr}
	return r
}

// A replica elected once its standby has followed the Platform's
// generation renders its Releases at once: the Platform reconciler of the
// same process knows the standby's outcome, and a Release need not wait
// for it to publish the same generation again. A generation the standby
// has not followed, the Release waits for.
func TestElectedReleaseWaitsOnlyForWhatItsStandbyHasNotFollowed(t *testing.T) {
	ctx := context.Background()
	rel := standbyRelease("r1")
	r := newReplica(t, standbyPlatform(), rel)
	s, pr, rr, c := r.s, r.pr, r.rr, r.c
	platformReq := ctrl.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.PlatformName}}
	releaseReq := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rel)}
	if _, err := s.reconcilePlatform(ctx, platformReq); err != nil {
		t.Fatal(err)
	}
	if r.notices != 1 {
		t.Fatalf("the standby's publish of generation 3 gave %d notices to the Releases, want 1", r.notices)
	}
	r.elect()

	// statusOf reconciles the Release and returns its result and status.
	statusOf := func() (ctrl.Result, v1alpha1.ReleaseStatus) {
		t.Helper()
		res, err := rr.Reconcile(ctx, releaseReq)
		if err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.Release
		if err := c.Get(ctx, releaseReq.NamespacedName, &got); err != nil {
			t.Fatal(err)
		}
		return res, got.Status
	}
	if res, st := statusOf(); !res.IsZero() || st.PlatformGeneration != 3 {
		t.Fatalf("elected, the standby having followed generation 3: %+v, status %+v; want rendered against 3 at once", res, st)
	}

	// Generation 4, which the standby did not follow before the election.
	var p v1alpha1.Platform
	if err := c.Get(ctx, platformReq.NamespacedName, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Labels = map[string]v1alpha1.LabelValue{"tier": "gold"}
	p.Generation = 4
	if err := c.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	var cur v1alpha1.Release
	if err := c.Get(ctx, releaseReq.NamespacedName, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Files["shop.cue"] = strings.Replace(cur.Spec.Files["shop.cue"], "replicas: 2", "replicas: 3", 1)
	cur.Generation = 2
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	if res, st := statusOf(); res.RequeueAfter <= 0 || st.ObservedGeneration != 1 {
		t.Fatalf("platform generation 4 undecided: %+v, status %+v; want a requeue and the status untouched", res, st)
	}
	if _, err := pr.Reconcile(ctx, platformReq); err != nil {
		t.Fatal(err)
	}
	if res, st := statusOf(); !res.IsZero() || st.PlatformGeneration != 4 || st.ObservedGeneration != 2 {
		t.Fatalf("platform generation 4 published: %+v, status %+v; want generation 2 rendered against 4", res, st)
	}
}

// A Platform deleted and created again while the standby's replica is
// elected: its Platform reconciler knows that the generation served is
// the old object's, which the standby published, and publishes the new
// object's generation 1 in its place, rather than refuse it as older
// than the old object's generation 3.
func TestElectedForgetsThePlatformItsStandbyServedOfAnObjectGone(t *testing.T) {
	ctx := context.Background()
	r := newReplica(t, standbyPlatform())
	s, pr, c := r.s, r.pr, r.c
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.PlatformName}}
	if _, err := s.reconcilePlatform(ctx, req); err != nil {
		t.Fatal(err)
	}
	r.elect()
	if err := c.Delete(ctx, standbyPlatform()); err != nil {
		t.Fatal(err)
	}
	again := standbyPlatform()
	again.UID, again.Generation = "u2", 1
	again.Spec.Name = "acme2"
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	if _, err := pr.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile of the object created again: %v", err)
	}
	rec, ok := pr.Publisher.Store().Generated()
	if !ok || rec.Generation != 1 || rec.Platform.Name != "acme2" {
		t.Fatalf("the elected replica serves %+v (%v); want generation 1 of the new object", rec, ok)
	}
}

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
