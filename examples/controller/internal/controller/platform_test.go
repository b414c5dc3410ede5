package controller_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
)

// fixture is a reconciler pair on the fake client with a booted Publisher.
type fixture struct {
	client   client.Client
	pub      *platform.Publisher
	events   *events.FakeRecorder
	platform *controller.PlatformReconciler
	release  *controller.ReleaseReconciler
	changed  int
}

func newFixture(t *testing.T, boot bool, objs ...client.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, boot, objs...)
}

// newFixtureWith is newFixture with a Publisher on the evaluator k (nil: in-process).
func newFixtureWith(t *testing.T, k platform.Evaluator, boot bool, objs ...client.Object) *fixture {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme()).
		WithStatusSubresource(&v1alpha1.Platform{}, &v1alpha1.Release{}).
		WithObjects(objs...).Build()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true, Evaluator: k})
	if boot {
		if err := pub.Boot(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- pub.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	f := &fixture{client: c, pub: pub, events: events.NewFakeRecorder(100)}
	f.platform = &controller.PlatformReconciler{Client: c, Publisher: pub, Recorder: f.events, Changed: func() { f.changed++ }}
	f.release = &controller.ReleaseReconciler{Client: c, Publisher: pub, Evaluator: k, Recorder: f.events, Platforms: f.platform, Key: statusKey(t, c)}
	return f
}

var platformKey = types.NamespacedName{Name: v1alpha1.PlatformName}

// reconcilePlatform runs one reconcile of the singleton and returns the
// object afterwards and the reconcile's error.
func (f *fixture) reconcilePlatform(t *testing.T) (*v1alpha1.Platform, ctrl.Result, error) {
	t.Helper()
	res, err := f.platform.Reconcile(context.Background(), ctrl.Request{NamespacedName: platformKey})
	var p v1alpha1.Platform
	if gerr := f.client.Get(context.Background(), platformKey, &p); gerr != nil {
		return nil, res, err
	}
	return &p, res, err
}

// setSpec replaces the singleton's spec and sets its generation, as the
// API server would.
func (f *fixture) setSpec(t *testing.T, spec v1alpha1.PlatformSpec, generation int64) {
	t.Helper()
	var p v1alpha1.Platform
	if err := f.client.Get(context.Background(), platformKey, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec, p.Generation = spec, generation
	if err := f.client.Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
}

// drain returns the events recorded so far.
func (f *fixture) drain() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func condition(t *testing.T, conds []metav1.Condition, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, conds)
	}
	return *c
}

func wantCondition(t *testing.T, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := condition(t, conds, typ)
	if c.Status != status || c.Reason != reason {
		t.Fatalf("%s = %s/%s (%q), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	return c
}

func TestPlatformNotBootedRetries(t *testing.T) {
	f := newFixture(t, false, newPlatform(acme(), 1))
	p, _, err := f.reconcilePlatform(t)
	if !errors.Is(err, platform.ErrNotBooted) {
		t.Fatalf("Reconcile before boot: %v, want ErrNotBooted (retried with backoff)", err)
	}
	if len(p.Status.Conditions) != 0 || f.pub.Store().Generation() != 0 {
		t.Fatalf("before boot: status %+v, store generation %d; want both untouched", p.Status, f.pub.Store().Generation())
	}
}

func TestPlatformPublishes(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	p, res, err := f.reconcilePlatform(t)
	if err != nil || !res.IsZero() {
		t.Fatalf("Reconcile: %v, %+v", err, res)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionTrue, controller.ReasonPublished)
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformPublished, metav1.ConditionTrue, controller.ReasonPublished)
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionFalse, controller.ReasonBuilt)
	if p.Status.PublishedGeneration != 1 || p.Status.ObservedGeneration != 1 || p.Status.Catalogs != 1 {
		t.Fatalf("status %+v, want published and observed generation 1, 1 catalog", p.Status)
	}
	g, ok := f.pub.Store().Generated()
	if !ok || g.Generation != 1 || g.Platform.Name != "acme" {
		t.Fatalf("store holds %+v, %v; want generation 1 of acme", g, ok)
	}
	if ev := f.drain(); len(ev) != 1 || !strings.Contains(ev[0], "Normal Published") {
		t.Fatalf("events %q, want one Normal Published", ev)
	}
	if f.changed != 1 {
		t.Fatalf("Changed called %d times, want 1", f.changed)
	}

	// A second reconcile of the same generation changes nothing and says
	// nothing.
	again, _, err := f.reconcilePlatform(t)
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != p.ResourceVersion {
		t.Fatalf("an identical reconcile wrote the status again")
	}
	if ev := f.drain(); len(ev) != 0 || f.changed != 1 {
		t.Fatalf("an identical reconcile recorded %q and %d changes", ev, f.changed)
	}
}

func TestPlatformInvalidSpecKeepsServing(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	bad := acme()
	bad.Catalogs[0].Version = "1.4" // not a semantic version
	f.setSpec(t, bad, 2)
	f.drain()

	p, res, err := f.reconcilePlatform(t)
	if !errors.Is(err, reconcile.TerminalError(nil)) || !res.IsZero() {
		t.Fatalf("Reconcile of an invalid spec: %v, %+v; want a terminal error, no retry", err, res)
	}
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, controller.ReasonInvalidSpec)
	if !strings.Contains(c.Message, `spec.catalogs[0].version "1.4"`) {
		t.Fatalf("BuildFailed message %q does not name the field and value", c.Message)
	}
	ready := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionFalse, controller.ReasonInvalidSpec)
	if !strings.Contains(ready.Message, "generation 1 still serves") {
		t.Fatalf("Ready message %q does not say generation 1 still serves", ready.Message)
	}
	if p.Status.PublishedGeneration != 1 || f.pub.Store().Generation() != 1 {
		t.Fatalf("published %d, store %d; want generation 1 still served", p.Status.PublishedGeneration, f.pub.Store().Generation())
	}
	if stale := condition(t, p.Status.Conditions, v1alpha1.PlatformStale); !strings.Contains(stale.Message, "generation 1 serves: generation 2 has an invalid spec") {
		t.Fatalf("Stale = %q; want generation 1 named as serving because 2 has an invalid spec", stale.Message)
	}
	if ev := f.drain(); len(ev) != 1 || !strings.Contains(ev[0], "Warning InvalidSpec") {
		t.Fatalf("events %q, want one Warning InvalidSpec", ev)
	}
}

func TestPlatformBuildFailureHasPositions(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	dir1 := f.pub.Layout().Dir(1)
	broken := acme()
	broken.Overlay = "name: \"other\"\n"
	f.setSpec(t, broken, 2)

	p, res, err := f.reconcilePlatform(t)
	if !errors.Is(err, reconcile.TerminalError(nil)) || !res.IsZero() {
		t.Fatalf("Reconcile of a spec that does not build: %v, %+v; want a terminal error, no retry", err, res)
	}
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, controller.ReasonBuildFailed)
	if !strings.Contains(c.Message, controller.OverlayFile+":2:") || !strings.Contains(c.Message, "platform.cue:") {
		t.Fatalf("BuildFailed message %q lacks the positions in overlay.cue and platform.cue", c.Message)
	}
	t.Logf("BuildFailed: %s", c.Message)
	if f.pub.Store().Generation() != 1 || p.Status.PublishedGeneration != 1 {
		t.Fatalf("after a failed build the store serves %d, status %d; want 1", f.pub.Store().Generation(), p.Status.PublishedGeneration)
	}
	if _, err := os.Stat(filepath.Join(dir1, "platform.cue")); err != nil {
		t.Fatalf("the served generation's directory: %v", err)
	}

	// The Stale condition says which generation serves, and why it is not
	// the object's.
	stale := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformStale, metav1.ConditionFalse, controller.ReasonCurrent)
	if stale.ObservedGeneration != 2 || !strings.Contains(stale.Message, "generation 1 serves") || !strings.Contains(stale.Message, "generation 2 failed to build") {
		t.Fatalf("Stale = %q at observed generation %d; want generation 1 named as serving because 2 failed to build", stale.Message, stale.ObservedGeneration)
	}

	// Mending the spec publishes the next generation.
	f.setSpec(t, acme(), 3)
	p, _, err = f.reconcilePlatform(t)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionFalse, controller.ReasonBuilt)
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionTrue, controller.ReasonPublished)
	if p.Status.PublishedGeneration != 3 {
		t.Fatalf("published %d, want 3", p.Status.PublishedGeneration)
	}
	if stale := condition(t, p.Status.Conditions, v1alpha1.PlatformStale); !strings.Contains(stale.Message, "generation 3, the object's, serves") {
		t.Fatalf("Stale = %q after generation 3 published", stale.Message)
	}
}

func TestPlatformStaleGeneration(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 3))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	// An older generation, as a lagging cache might still show.
	f.setSpec(t, acme(), 2)
	f.drain()
	p, res, err := f.reconcilePlatform(t)
	if err != nil || !res.IsZero() {
		t.Fatalf("Reconcile of a stale generation: %v, %+v; want no retry", err, res)
	}
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformStale, metav1.ConditionTrue, controller.ReasonStale)
	if !strings.Contains(c.Message, "generation 2 is older than the generation 3 served") {
		t.Fatalf("Stale message %q", c.Message)
	}
	if f.pub.Store().Generation() != 3 {
		t.Fatalf("store serves %d after a stale publish, want 3", f.pub.Store().Generation())
	}
}

func TestPlatformDeletedIsForgotten(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	dir := f.pub.Layout().Dir(1)
	_, release, ok := f.pub.Store().Lease()
	if !ok {
		t.Fatal("no lease")
	}
	if err := f.client.Delete(context.Background(), newPlatform(acme(), 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	if g := f.pub.Store().Generation(); g != 0 {
		t.Fatalf("store serves %d after delete, want nothing", g)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a leased directory went with the delete: %v", err)
	}
	if f.changed != 2 {
		t.Fatalf("Changed called %d times, want 2 (publish, forget)", f.changed)
	}
	release()
	eventually(t, "the forgotten directory is removed after its release", func() error {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat %s: %v", dir, err)
		}
		return nil
	})
}

func TestPlatformOtherNamesIgnored(t *testing.T) {
	f := newFixture(t, true)
	res, err := f.platform.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "other"}})
	if err != nil || !res.IsZero() || f.pub.Store().Generation() != 0 || f.changed != 0 {
		t.Fatalf("Reconcile of another name: %v, %+v, store %d", err, res, f.pub.Store().Generation())
	}
}

func TestPlatformRecreatedUnseenIsNotStale(t *testing.T) {
	first := newPlatform(acme(), 5)
	first.UID = "first"
	f := newFixture(t, true, first)
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	// Deleted and created again before the next reconcile: the work queue
	// folds both events into one request, so the reconciler never sees the
	// object missing, only a new object (a new UID) at generation 1.
	if err := f.client.Delete(context.Background(), newPlatform(acme(), 5)); err != nil {
		t.Fatal(err)
	}
	again := newPlatform(acme(), 1)
	again.UID = "second"
	if err := f.client.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	p, _, err := f.reconcilePlatform(t)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionTrue, controller.ReasonPublished)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformStale); c != nil && c.Status == metav1.ConditionTrue {
		t.Fatalf("a recreated Platform was refused as stale: %s", c.Message)
	}
	if g := f.pub.Store().Generation(); g != 1 {
		t.Fatalf("store serves %d, want the new object's generation 1", g)
	}
	eventually(t, "the old object's directory is removed", func() error {
		if on := onDisk(f.pub.Stats()); len(on) != 1 || on[0] != 1 {
			return fmt.Errorf("on disk: %v", on)
		}
		return nil
	})
}

// A Platform changed at the same generation is served while a render
// holds the old one: the reconcile waits for no lease, and the leased
// directory keeps its files.
func TestPlatformChangedWhileLeasedIsServedAtOnce(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	held, release, ok := f.pub.Store().Lease()
	if !ok {
		t.Fatal("no lease")
	}
	defer release()
	changed := acme()
	changed.Labels["tier"] = "gold"
	f.setSpec(t, changed, 1)

	p, _, err := f.reconcilePlatform(t)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionTrue, controller.ReasonPublished)
	g, ok := f.pub.Store().Generated()
	if !ok || g.Generation != 1 || g.Platform.Labels["tier"] != "gold" || g.Dir == held.Dir {
		t.Fatalf("after the change the store holds %+v, %v; want generation 1 with the new labels beside %s", g, ok, held.Dir)
	}
	if b, err := os.ReadFile(filepath.Join(held.Dir, "platform.cue")); err != nil || strings.Contains(string(b), "gold") {
		t.Fatalf("the leased directory changed: %v", err)
	}
}

// TestPlatformContentRefusalIsABuildFailure: a spec whose module the
// kernel refuses for its content (here an overlay nested past MaxDepth,
// a few hundred bytes) is a failed build like one with a problem: Ready
// False and BuildFailed with the file named relative to the platform
// directory, a terminal error that is not retried, the generation served
// before still served; the next generation tries again.
func TestPlatformContentRefusalIsABuildFailure(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	deep := acme()
	deep.Overlay = "x: " + strings.Repeat("a: ", 101) /* past the default Limits.MaxDepth, 100 */ + "1\n"
	f.setSpec(t, deep, 2)
	f.drain()

	p, res, err := f.reconcilePlatform(t)
	if !errors.Is(err, reconcile.TerminalError(nil)) || !res.IsZero() {
		t.Fatalf("Reconcile of a spec past MaxDepth: %v, %+v; want a terminal error, no retry", err, res)
	}
	root := f.pub.Layout().Root
	for _, cond := range []string{v1alpha1.PlatformBuildFailed, v1alpha1.PlatformReady} {
		status := metav1.ConditionTrue
		if cond == v1alpha1.PlatformReady {
			status = metav1.ConditionFalse
		}
		c := wantCondition(t, p.Status.Conditions, cond, status, controller.ReasonBuildFailed)
		if !strings.Contains(c.Message, controller.OverlayFile) || !strings.Contains(c.Message, "MaxDepth") || strings.Contains(c.Message, root) {
			t.Fatalf("%s message %q: want the overlay and the limit named, relative to the platform directory", cond, c.Message)
		}
	}
	if st := f.pub.Stats(); st.FailedBuilds != 1 || f.pub.Store().Generation() != 1 {
		t.Fatalf("failed builds %d, serving %d; want 1 and generation 1", st.FailedBuilds, f.pub.Store().Generation())
	}
	if ev := f.drain(); len(ev) != 1 || !strings.Contains(ev[0], "Warning BuildFailed") {
		t.Fatalf("events %q, want one Warning BuildFailed", ev)
	}

	f.setSpec(t, acme(), 3)
	p, _, err = f.reconcilePlatform(t)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionTrue, controller.ReasonPublished)
}

// TestPlatformInvalidSpecNamesEveryField: a spec with several fields the
// generator refuses names each of them.
func TestPlatformInvalidSpecNamesEveryField(t *testing.T) {
	bad := acme()
	bad.Catalogs[0].Version = "1.4"
	bad.Labels["tier"] = "not a value"
	f := newFixture(t, true, newPlatform(bad, 1))
	p, _, err := f.reconcilePlatform(t)
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("Reconcile of an invalid spec: %v, want a terminal error", err)
	}
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, controller.ReasonInvalidSpec)
	for _, want := range []string{`spec.catalogs[0].version "1.4"`, `spec.labels["tier"] "not a value"`} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("BuildFailed message %q does not name %s", c.Message, want)
		}
	}
}
