package controller_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/kernel/isolate"
)

// The tests in this file restart the controller: a replica with a fresh
// Publisher and fresh reconcilers on the same API server (the fake
// client) reads the verdicts the statuses hold.

// counting is the kernel in this process counting its renders. The render
// of an instance whose digest is bomb's fails as a worker killed past its
// time budget would, at once: the time budget's verdict without waiting
// one out.
type counting struct {
	*kernel.Kernel
	mu      sync.Mutex
	renders int
}

var bombDigest = kernel.Digest(instanceOf(bomb()).Files)

func (e *counting) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	e.mu.Lock()
	e.renders++
	e.mu.Unlock()
	if in.Snapshot != nil && in.Snapshot.Digest() == bombDigest {
		return kernel.RenderOutput{}, &isolate.BudgetError{Op: "render", Dir: in.Snapshot.Dir(), Budget: "time", Value: int64(budget)}
	}
	return e.Kernel.Render(ctx, in)
}

// count returns the renders so far.
func (e *counting) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.renders
}

// replica is one process of the controller: its own Publisher (booted,
// on a directory of its own), evaluator and reconcilers, on the client
// shared with the other replicas.
type replica struct {
	ev      *counting
	pub     *platform.Publisher
	events  *events.FakeRecorder
	release *controller.ReleaseReconciler
	plat    *controller.PlatformReconciler
}

// startReplica starts a replica on c whose reconciler names the
// evaluator budgets (nil: an evaluator in this process, with none); its
// renders go through a counting kernel standing in for the workers.
func startReplica(t *testing.T, c client.Client, budgets *isolate.Workers) *replica {
	t.Helper()
	r := &replica{ev: &counting{Kernel: kernel.New()}, events: events.NewFakeRecorder(100)}
	r.pub = platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true, Evaluator: r.ev})
	if err := r.pub.Boot(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.pub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	var ev platform.Evaluator = r.ev
	if budgets != nil {
		ev = budgets
	}
	r.plat = &controller.PlatformReconciler{Client: c, Publisher: r.pub, Recorder: r.events, Changed: func() {}}
	r.release = &controller.ReleaseReconciler{Client: c, Publisher: r.pub, Evaluator: ev, Recorder: r.events, Platforms: r.plat}
	if _, err := r.plat.Reconcile(context.Background(), ctrl.Request{NamespacedName: platformKey}); err != nil {
		t.Fatalf("reconcile the Platform: %v", err)
	}
	drainEvents(r.events) // the Platform's
	return r
}

// reconcile reconciles the Release once and returns its error and the
// Release stored afterwards.
func (r *replica) reconcile(t *testing.T) (*v1alpha1.Release, error) {
	t.Helper()
	_, err := r.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
	var rel v1alpha1.Release
	if gerr := r.release.Client.Get(context.Background(), releaseKey, &rel); gerr != nil {
		t.Fatal(gerr)
	}
	return &rel, err
}

// broken is shop with a component whose replicas the catalog refuses:
// its render fails with the instance's problems.
func broken() map[string]string {
	files := shop("v1.4.0")
	files["shop.cue"] += "components: web: replicas: \"two\"\n"
	return files
}

// decided starts a replica on a client holding the Platform and a Release
// of files, reconciles the Release and checks its verdict: RenderFailed
// with an inputs digest, from one render.
func decided(t *testing.T, files map[string]string, budgets *isolate.Workers) (client.Client, *v1alpha1.Release) {
	t.Helper()
	f := newFixture(t, false, newPlatform(acme(), 1), newRelease(files, 1))
	a := startReplica(t, f.client, budgets)
	rel, err := a.reconcile(t)
	if err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("the first replica's reconcile: %v", err)
	}
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if n := a.ev.count(); n != 1 {
		t.Fatalf("the first replica rendered %d time(s); want one", n)
	}
	return f.client, rel
}

// TestReleaseVerdictSurvivesARestart: a Release's status holds
// RenderFailed for its current inputs (a render past the time budget, a
// refused instance). A restarted replica, with nothing in memory and an
// empty render memo, reconciles it: it evaluates nothing, writes nothing,
// records no event, and returns no error; nor does its next reconcile.
func TestReleaseVerdictSurvivesARestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
	}{
		{"over budget", bomb()},
		{"refused", broken()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, before := decided(t, tc.files, nil)
			b := startReplica(t, c, nil)
			for i := range 2 {
				rel, err := b.reconcile(t)
				if err != nil {
					t.Fatalf("reconcile %d of the restarted replica: %v; want none", i, err)
				}
				if n := b.ev.count(); n != 0 {
					t.Fatalf("reconcile %d of the restarted replica evaluated the spec %d time(s); want none: the status holds the verdict", i, n)
				}
				if rel.ResourceVersion != before.ResourceVersion {
					t.Fatalf("reconcile %d of the restarted replica wrote the status: %+v; want it kept as it is", i, rel.Status)
				}
			}
			if ev := drainEvents(b.events); len(ev) != 0 {
				t.Fatalf("events %q from the restarted replica; want none", ev)
			}
			if !strings.HasPrefix(before.Status.InputsDigest, "sha256:") {
				t.Fatalf("RenderFailed with inputs digest %q; want sha256:…", before.Status.InputsDigest)
			}
		})
	}
}

// TestReleaseVerdictOfOtherInputsIsEvaluated: a status written for
// inputs other than the current ones, or one that is not a terminal
// verdict, is not trusted by a restarted replica: the spec is evaluated
// again, and the status written holds the new verdict's digest. A change
// the verdict does not depend on is no change: a spec over budget holds
// whatever the platform, a refused one whatever the budgets.
func TestReleaseVerdictOfOtherInputsIsEvaluated(t *testing.T) {
	tenSeconds := &isolate.Workers{Timeout: budget, Memory: 8 << 30}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		change  func(t *testing.T, c client.Client, rel *v1alpha1.Release)
		budgets *isolate.Workers // the restarted replica's; nil: the first one's
		want    int              // evaluations
	}{
		{name: "over budget, spec changed", files: bomb(), want: 1, change: func(t *testing.T, c client.Client, rel *v1alpha1.Release) {
			rel.Spec.Files = broken()
			rel.Generation++
			update(t, c, rel)
		}},
		{name: "over budget, spec changed and back", files: bomb(), want: 1, change: func(t *testing.T, c client.Client, rel *v1alpha1.Release) {
			rel.Generation += 2 // the status observed an earlier generation
			update(t, c, rel)
		}},
		{name: "over budget, platform changed", files: bomb(), want: 0, change: newPlatformGeneration},
		{name: "over budget, budgets changed", files: bomb(), budgets: &isolate.Workers{Timeout: 2 * budget, Memory: 8 << 30}, want: 1},
		{name: "over budget, memory budget changed", files: bomb(), budgets: &isolate.Workers{Timeout: budget, Memory: 4 << 30}, want: 1},
		{name: "over budget, limits changed", files: bomb(), budgets: &isolate.Workers{Kernel: &kernel.Kernel{Limits: kernel.Limits{MaxFiles: 10}}, Timeout: budget, Memory: 8 << 30}, want: 1},
		{name: "over budget, same budgets", files: bomb(), budgets: tenSeconds, want: 0},
		{name: "refused, platform changed", files: broken(), want: 1, change: newPlatformGeneration},
		{name: "refused, budgets changed", files: broken(), budgets: &isolate.Workers{Timeout: 2 * budget, Memory: 8 << 30}, want: 0},
		{name: "no digest (an older controller's status)", files: bomb(), want: 1, change: func(t *testing.T, c client.Client, rel *v1alpha1.Release) {
			rel.Status.InputsDigest = ""
			updateStatus(t, c, rel)
		}},
		{name: "digest of other inputs", files: broken(), want: 1, change: func(t *testing.T, c client.Client, rel *v1alpha1.Release) {
			rel.Status.InputsDigest = "sha256:" + strings.Repeat("0", 64)
			updateStatus(t, c, rel)
		}},
		{name: "rendered, with the over-budget digest", files: bomb(), want: 1, change: func(t *testing.T, c client.Client, rel *v1alpha1.Release) {
			c0 := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
			c0.Status, c0.Reason, c0.Message = metav1.ConditionTrue, v1alpha1.ReasonRendered, "rendered 0 resource(s)"
			updateStatus(t, c, rel)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, rel := decided(t, tc.files, tenSeconds)
			if tc.change != nil {
				tc.change(t, c, rel)
			}
			budgets := tc.budgets
			if budgets == nil {
				budgets = tenSeconds
			}
			b := startReplica(t, c, budgets)
			after, err := b.reconcile(t)
			if err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Fatalf("reconcile of the restarted replica: %v", err)
			}
			if n := b.ev.count(); n != tc.want {
				t.Fatalf("the restarted replica evaluated the spec %d time(s); want %d", n, tc.want)
			}
			if tc.want == 0 {
				return
			}
			cond := wantCondition(t, after.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
			if !strings.HasPrefix(after.Status.InputsDigest, "sha256:") || after.Status.InputsDigest == "sha256:"+strings.Repeat("0", 64) ||
				after.Status.ObservedGeneration != after.Generation || cond.ObservedGeneration != after.Generation {
				t.Fatalf("status after the evaluation: digest %q, observed %d (Rendered %d) of generation %d; want the new verdict's",
					after.Status.InputsDigest, after.Status.ObservedGeneration, cond.ObservedGeneration, after.Generation)
			}
			// The new verdict holds in its turn, for the next restart.
			next := startReplica(t, c, budgets)
			if _, err := next.reconcile(t); err != nil || next.ev.count() != 0 {
				t.Fatalf("the next restart: %v, %d evaluation(s); want none", err, next.ev.count())
			}
		})
	}
}

// TestReleaseRenderedStatusIsRenderedAgain: a status that says the spec
// rendered, with its digest, is not trusted: a restarted replica renders
// it (a warm replica's memo would answer), and writes nothing when the
// render agrees.
func TestReleaseRenderedStatusIsRenderedAgain(t *testing.T) {
	f := newFixture(t, false, newPlatform(acme(), 1), newRelease(shop("v1.4.0"), 1))
	a := startReplica(t, f.client, nil)
	before, err := a.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	wantCondition(t, before.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if before.Status.InputsDigest == "" {
		t.Fatal("a rendered status without its inputs digest")
	}
	b := startReplica(t, f.client, nil)
	after, err := b.reconcile(t)
	if err != nil || b.ev.count() != 1 || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("restarted: %v, %d render(s), written %v; want one render and no write", err, b.ev.count(), after.ResourceVersion != before.ResourceVersion)
	}
}

// newPlatformGeneration publishes the Platform's next generation, with
// another catalog version.
func newPlatformGeneration(t *testing.T, c client.Client, _ *v1alpha1.Release) {
	t.Helper()
	var p v1alpha1.Platform
	if err := c.Get(context.Background(), platformKey, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Catalogs[0].Version = "v1.5.0"
	p.Generation++
	if err := c.Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, c client.Client, rel *v1alpha1.Release) {
	t.Helper()
	if err := c.Update(context.Background(), rel); err != nil {
		t.Fatal(err)
	}
}

func updateStatus(t *testing.T, c client.Client, rel *v1alpha1.Release) {
	t.Helper()
	if err := c.Status().Update(context.Background(), rel); err != nil {
		t.Fatal(err)
	}
}

// drainEvents returns the events rec recorded so far.
func drainEvents(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
