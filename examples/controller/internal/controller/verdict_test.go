package controller_test

import (
	"context"
	"errors"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"pgregory.net/rapid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// The tests in this file restart the controller: a replica with a fresh
// Publisher and fresh reconcilers on the same API server (the fake
// client) reads the verdicts the statuses hold.

// counting is the kernel in this process counting its renders. The render
// of one of bomb's variants fails as a worker killed past its time budget
// would, at once: the time budget's verdict without waiting one out.
type counting struct {
	*kernel.Kernel
	mu      sync.Mutex
	renders int
}

// bombDigests are the digests of bomb's variants (bombVariant).
var bombDigests = map[string]bool{}

func init() {
	for v := range 3 {
		bombDigests[kernel.Digest(instanceOf(bombVariant(v)).Files)] = true
	}
}

// bombVariant is bomb, with a comment naming variant unless it is 0.
func bombVariant(variant int) map[string]string {
	files := bomb()
	if variant != 0 {
		files["shop.cue"] += fmt.Sprintf("// variant %d\n", variant)
	}
	return files
}

func (e *counting) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	e.mu.Lock()
	e.renders++
	e.mu.Unlock()
	if in.Snapshot != nil && bombDigests[in.Snapshot.Digest()] {
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

// restarted is one process of the controller: its own Publisher (booted,
// on a directory of its own), evaluator and reconcilers, on the client
// shared with the other replicas.
type restarted struct {
	ev      *counting
	renders atomic.Int64 // Publisher.Render calls of the Release reconciler, memo hits included
	pub     *platform.Publisher
	events  *events.FakeRecorder
	release *controller.ReleaseReconciler
	plat    *controller.PlatformReconciler
}

// startReplica starts a replica on c whose reconciler names the
// evaluator budgets (nil: an evaluator in this process, with none); its
// renders go through a counting kernel standing in for the workers. It is
// stopped when t ends.
func startReplica(t *testing.T, c client.Client, budgets *isolate.Workers) *restarted {
	t.Helper()
	r, stop, err := bootReplica(t.TempDir(), c, budgets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

// bootReplica is startReplica with its Publisher in dir, returning the
// function that stops it.
func bootReplica(dir string, c client.Client, budgets *isolate.Workers) (*restarted, func() error, error) {
	r := &restarted{ev: &counting{Kernel: kernel.New()}, events: events.NewFakeRecorder(100)}
	r.pub = platform.NewPublisher(filepath.Join(dir, "platform"), platform.PublisherOptions{NoSync: true, Evaluator: r.ev})
	if err := r.pub.Boot(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.pub.Run(ctx) }()
	stop := func() error {
		cancel()
		return <-done
	}
	var ev platform.Evaluator = r.ev
	if budgets != nil {
		ev = budgets
	}
	r.plat = &controller.PlatformReconciler{Client: c, Publisher: r.pub, Recorder: r.events, Changed: func() {}}
	// The replicas of one client share the status key's Secret.
	key := &controller.StatusKey{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: "default", Name: controller.DefaultStatusKeyName}}
	if err := key.Load(context.Background()); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("load the status key: %w", err), stop())
	}
	r.release = &controller.ReleaseReconciler{Client: c, Publisher: r.pub, Evaluator: ev, Recorder: r.events, Platforms: r.plat, Key: key,
		Observe: func(float64, error) { r.renders.Add(1) }}
	if _, err := r.plat.Reconcile(context.Background(), ctrl.Request{NamespacedName: platformKey}); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("reconcile the Platform: %w", err), stop())
	}
	drainEvents(r.events) // the Platform's
	return r, stop, nil
}

// reconcile reconciles the Release once and returns its error and the
// Release stored afterwards.
func (r *restarted) reconcile(t *testing.T) (*v1alpha1.Release, error) {
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

// TestReleaseRenderedStatusIsTrusted: a status that says the spec
// rendered, signed by the controller, is its verdict: a restarted replica
// neither renders nor writes it.
func TestReleaseRenderedStatusIsTrusted(t *testing.T) {
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
	if err != nil || b.ev.count() != 0 || after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("restarted: %v, %d render(s), written %v; want none and no write", err, b.ev.count(), after.ResourceVersion != before.ResourceVersion)
	}
}

// TestReleaseKeyRotationEvaluatesOnce: after the status key's Secret is
// deleted, a replica makes a new key, evaluates the Release once and
// signs it under the new key; the next restart trusts it again. A status
// copied from another Release is evaluated too.
func TestReleaseKeyRotationEvaluatesOnce(t *testing.T) {
	f := newFixture(t, false, newPlatform(acme(), 1), newRelease(shop("v1.4.0"), 1))
	a := startReplica(t, f.client, nil)
	before, err := a.reconcile(t)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: controller.DefaultStatusKeyName}}
	if err := f.client.Delete(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	b := startReplica(t, f.client, nil)
	rotated, err := b.reconcile(t)
	if err != nil || b.ev.count() != 1 || rotated.Status.MAC == before.Status.MAC {
		t.Fatalf("after the rotation: %v, %d evaluation(s), MAC changed %v; want one evaluation and a new MAC", err, b.ev.count(), rotated.Status.MAC != before.Status.MAC)
	}
	c := startReplica(t, f.client, nil)
	after, err := c.reconcile(t)
	if err != nil || c.ev.count() != 0 || after.ResourceVersion != rotated.ResourceVersion {
		t.Fatalf("the next restart: %v, %d evaluation(s), written %v; want none", err, c.ev.count(), after.ResourceVersion != rotated.ResourceVersion)
	}

	// The same verdict copied onto another Release fails its MAC.
	other := newRelease(shop("v1.4.0"), 1)
	other.Name, other.UID = "copy", "uid-of-the-copy" // the fake client sets no UID of its own
	if err := f.client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	other.Status = *after.Status.DeepCopy()
	updateStatus(t, f.client, other)
	d := startReplica(t, f.client, nil)
	if _, err := d.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(other)}); err != nil {
		t.Fatal(err)
	}
	if d.ev.count() != 1 {
		t.Fatalf("a status copied from another Release: %d evaluation(s), want 1", d.ev.count())
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

// Kinds of a Release's spec in TestReleaseVerdictModel.
const (
	kindRendered   = iota // renders
	kindRefused           // the instance's problems
	kindOverBudget        // killed past the time budget
)

// specOf returns a spec of kind, its variant named in a comment.
func specOf(kind, variant int) map[string]string {
	var files map[string]string
	switch kind {
	case kindRendered:
		files = shop("v1.4.0")
	case kindRefused:
		files = broken()
	default:
		return bombVariant(variant)
	}
	files["shop.cue"] += fmt.Sprintf("// variant %d\n", variant)
	return files
}

// A verdictKey is what the model takes a verdict's inputs to be: the
// spec, and the platform generation for a verdict of a render, or the
// budgets for one over budget.
type verdictKey struct {
	kind, variant int
	platform      int64 // 0 for a verdict over budget
	budgets       int   // -1 for a verdict of a render
}

// TestReleaseVerdictModel drives one Release through random spec changes
// (rendered, refused, over budget, a spec changed back to an earlier
// one), Platform changes, restarts (with the same budgets or others),
// statuses tampered with (the digest cleared, as an earlier version wrote
// them; Rendered True forged over the verdict; either breaks the MAC), and
// reconciles, against a model of what each verdict holds for. After every
// reconcile: the reconciler rendered exactly when neither its memory nor a
// status as the controller signed it held a verdict for the current
// inputs (a status tampered with drops the memory's too); a status it kept is not
// written; its error is terminal exactly for a spec over budget decided
// or first stored; and the stored status is the verdict of the current
// spec, with its digest.
func TestReleaseVerdictModel(t *testing.T) {
	budgets := []*isolate.Workers{{Timeout: budget, Memory: 8 << 30}, {Timeout: 2 * budget, Memory: 8 << 30}}
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		kind, variant := rapid.IntRange(0, 2).Draw(rt, "kind"), rapid.IntRange(0, 2).Draw(rt, "variant")
		gen, platGen, b := int64(1), int64(1), 0
		f := newFixture(t, false, newPlatform(acme(), platGen), newRelease(specOf(kind, variant), gen))
		c := f.client
		var stops []func() error
		defer func() {
			for _, stop := range stops {
				if err := stop(); err != nil {
					rt.Errorf("Run: %v", err)
				}
			}
		}()
		start := func() *restarted {
			r, stop, err := bootReplica(t.TempDir(), c, budgets[b])
			if err != nil {
				rt.Fatal(err)
			}
			stops = append(stops, stop)
			return r
		}
		r := start()

		type verdict struct {
			gen int64
			key verdictKey
		}
		var (
			mem    *verdict // the replica's memory
			stored *verdict // the status's verdict; nil when it holds none
			digest bool     // the status holds its digest
			intact bool     // the status is as the controller signed it
		)
		current := func() verdictKey {
			if kind == kindOverBudget {
				return verdictKey{kind: kind, variant: variant, budgets: b}
			}
			return verdictKey{kind: kind, variant: variant, platform: platGen, budgets: -1}
		}
		get := func() *v1alpha1.Release {
			var rel v1alpha1.Release
			if err := c.Get(ctx, releaseKey, &rel); err != nil {
				rt.Fatal(err)
			}
			return &rel
		}

		rt.Repeat(map[string]func(*rapid.T){
			"spec": func(rt *rapid.T) {
				kind, variant = rapid.IntRange(0, 2).Draw(rt, "kind"), rapid.IntRange(0, 2).Draw(rt, "variant")
				gen++
				rel := get()
				rel.Spec.Files, rel.Generation = specOf(kind, variant), gen
				if err := c.Update(ctx, rel); err != nil {
					rt.Fatal(err)
				}
			},
			"platform": func(rt *rapid.T) {
				platGen++
				var p v1alpha1.Platform
				if err := c.Get(ctx, platformKey, &p); err != nil {
					rt.Fatal(err)
				}
				p.Spec.Catalogs[0].Version = fmt.Sprintf("v1.%d.0", 4+platGen)
				p.Generation = platGen
				if err := c.Update(ctx, &p); err != nil {
					rt.Fatal(err)
				}
				if _, err := r.plat.Reconcile(ctx, ctrl.Request{NamespacedName: platformKey}); err != nil {
					rt.Fatalf("reconcile the Platform: %v", err)
				}
			},
			"restart": func(rt *rapid.T) {
				if err := stops[len(stops)-1](); err != nil {
					rt.Fatal(err)
				}
				stops = stops[:len(stops)-1]
				b = rapid.IntRange(0, 1).Draw(rt, "budgets")
				r, mem = start(), nil
			},
			"tamper": func(rt *rapid.T) {
				if stored == nil {
					rt.Skip("no verdict stored")
				}
				rel := get()
				if rapid.Bool().Draw(rt, "clear the digest") {
					rel.Status.InputsDigest = ""
					digest = false
				} else {
					meta.SetStatusCondition(&rel.Status.Conditions, metav1.Condition{Type: v1alpha1.ReleaseRendered, Status: metav1.ConditionTrue,
						Reason: v1alpha1.ReasonRendered, Message: "forged", ObservedGeneration: rel.Generation})
				}
				intact = false
				if err := c.Status().Update(ctx, rel); err != nil {
					rt.Fatal(err)
				}
			},
			"reconcile": func(rt *rapid.T) {
				before := get()
				renders, evals := r.renders.Load(), r.ev.count()
				cur := current()
				// A status that fails its MAC drops the memory's verdict too.
				memHit := mem != nil && intact && *mem == verdict{gen, cur}
				statusHit := stored != nil && digest && intact && *stored == verdict{gen, cur}
				_, err := r.release.Reconcile(ctx, ctrl.Request{NamespacedName: releaseKey})
				after := get()
				wrote := after.ResourceVersion != before.ResourceVersion
				rendered := r.renders.Load() != renders
				if rendered != (!memHit && !statusHit) {
					rt.Fatalf("rendered %v; the model: memory holds the verdict %v, the status %v", rendered, memHit, statusHit)
				}
				if n := r.ev.count() - evals; n > 1 || n == 1 && !rendered {
					rt.Fatalf("%d evaluation(s) in one reconcile that rendered: %v", n, rendered)
				}
				if !memHit && statusHit && wrote {
					rt.Fatalf("a verdict kept from the status was written: %+v", after.Status)
				}
				wantTerminal := kind == kindOverBudget && (rendered || wrote)
				if terminal := errors.Is(err, reconcile.TerminalError(nil)); err != nil && !terminal || terminal != wantTerminal {
					rt.Fatalf("Reconcile: %v; want a terminal error: %v", err, wantTerminal)
				}
				v := verdict{gen, cur}
				mem, stored, digest, intact = &v, &v, true, true

				cond := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ReleaseRendered)
				wantStatus, wantReason := metav1.ConditionFalse, v1alpha1.ReasonRenderFailed
				if kind == kindRendered {
					wantStatus, wantReason = metav1.ConditionTrue, v1alpha1.ReasonRendered
				}
				switch {
				case cond == nil || cond.Status != wantStatus || cond.Reason != wantReason:
					rt.Fatalf("Rendered %+v for a spec of kind %d; want %s/%s", cond, kind, wantStatus, wantReason)
				case cond.ObservedGeneration != gen || after.Status.ObservedGeneration != gen:
					rt.Fatalf("status observed generation %d (Rendered %d); want %d", after.Status.ObservedGeneration, cond.ObservedGeneration, gen)
				case !strings.HasPrefix(after.Status.InputsDigest, "sha256:"):
					rt.Fatalf("inputs digest %q", after.Status.InputsDigest)
				case kind != kindOverBudget && after.Status.PlatformGeneration != platGen:
					rt.Fatalf("rendered against platform generation %d; want %d", after.Status.PlatformGeneration, platGen)
				case kind == kindOverBudget && !strings.Contains(cond.Message, "time budget"):
					rt.Fatalf("RenderFailed %q does not name the time budget", cond.Message)
				}
			},
		})
	})
}
