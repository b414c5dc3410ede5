package controller_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
)

// The steps in this file attack the controller as a tenant who may create
// only Releases would, and as a leader change does.

// objectLimit is the most bytes etcd stores in one request, its
// --max-request-bytes default, which the API server's objects must fit.
const objectLimit = 1536 << 10

// kills returns the workers' kills past the time budget so far.
func kills(t *testing.T, s *suite) float64 {
	t.Helper()
	return gathered(t, s, "leasekit_platform_worker_kills_total", map[string]string{"budget": "time"})
}

// releaseNamed waits until the Release name in releaseKey's namespace
// passes check.
func releaseNamed(t *testing.T, s *suite, name, what string, check func(*v1alpha1.Release) error) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	eventually(t, what, func() error {
		if err := s.client.Get(context.Background(), client.ObjectKey{Namespace: releaseKey.Namespace, Name: name}, &rel); err != nil {
			return err
		}
		return check(&rel)
	})
	return &rel
}

// testPaddedBomb: a Release padded as near the object size limit as the
// API server admits, with a time bomb inside. Its render is killed once,
// its RenderFailed status is stored, and a later platform change does not
// render it again.
func testPaddedBomb(t *testing.T, s *suite) {
	ctx := context.Background()
	killsBefore := kills(t, s)
	files := bomb()
	used := 0
	for name, content := range files {
		used += len([]rune(name)) + len([]rune(content))
	}
	// Padding in two CUE comments (each file under the kernel's
	// MaxFileSize), of 4-byte runes: the most bytes for the characters.
	pad := func(chars int) *v1alpha1.Release {
		rel := newRelease(bomb(), 0)
		rel.Name = "padded"
		for i, name := range []string{"pad1.cue", "pad2.cue"} {
			head := "package shop\n// "
			n := chars/2 - len(head) - len(name)
			if i == 1 {
				n = chars - chars/2 - len(head) - len(name)
			}
			rel.Spec.Files[name] = head + strings.Repeat("😀", n)
		}
		return rel
	}
	// Near the object size limit first; then, if admission refuses it, the
	// most characters admission admits.
	rel := pad((objectLimit - 8<<10) / 4)
	err := s.client.Create(ctx, rel)
	for err != nil && !apierrors.IsInvalid(err) && strings.Contains(err.Error(), "too large") {
		n := len([]rune(rel.Spec.Files["pad1.cue"])) + len([]rune(rel.Spec.Files["pad2.cue"])) - 1024
		rel = pad(n)
		err = s.client.Create(ctx, rel)
	}
	if apierrors.IsInvalid(err) {
		if !strings.Contains(err.Error(), fmt.Sprint(v1alpha1.MaxFilesChars)) {
			t.Fatalf("a spec past the files' bound refused with %v; want the bound named", err)
		}
		rel = pad(v1alpha1.MaxFilesChars - used)
		err = s.client.Create(ctx, rel)
	}
	if err != nil {
		t.Fatalf("create the padded bomb: %v", err)
	}
	t.Logf("padded bomb: %d bytes of files", func() int {
		n := 0
		for k, v := range rel.Spec.Files {
			n += len(k) + len(v)
		}
		return n
	}())
	releaseNamed(t, s, "padded", "the padded bomb's RenderFailed stored", func(rel *v1alpha1.Release) error {
		c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if c == nil || c.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(c.Message, "time budget") {
			return fmt.Errorf("Rendered %+v after %v kill(s)", c, kills(t, s)-killsBefore)
		}
		return nil
	})
	// A platform change brings every Release back; the bomb's spec has
	// not changed, so it is not rendered again.
	next := acme()
	next.Catalogs[0].Version = "v1.4.1"
	gen := updateSpec(t, s, next)
	ready(t, s, gen)
	renderedAgainst(t, s, gen)
	if n := kills(t, s) - killsBefore; n != 1 {
		t.Fatalf("kills of the padded bomb: %v, want 1", n)
	}
	if err := s.client.Delete(ctx, rel); err != nil {
		t.Fatal(err)
	}
}

// testManyLongKinds: a spec of a few hundred bytes renders a thousand
// components whose kinds are 1,600 characters long (a catalog that lists
// no kinds admits any). The list does not fit the status: the Release
// says so, with the count and the digest.
func testManyLongKinds(t *testing.T, s *suite) {
	ctx := context.Background()
	const anyPath = "example.com/catalogs/any@v1"
	spec := acme()
	spec.Catalogs = append(spec.Catalogs, v1alpha1.Catalog{Path: anyPath, Version: "v1.0.0"})
	gen := updateSpec(t, s, spec)
	ready(t, s, gen)

	files := shop("v1.4.0")
	files["shop.cue"] = `package shop

import ("list", "strings")

name: "many"
requires: "` + anyPath + `": "v1.0.0"
components: {for i in list.Range(0, 1000, 1) {"c\(i)": {kind: "K" + strings.Repeat("k", 1599), catalog: "` + anyPath + `", replicas: 1, spec: {image: "x:1", port: 80}}}}
`
	size := 0
	for k, v := range files {
		size += len(k) + len(v)
	}
	rel := newRelease(files, 0)
	rel.Name = "many"
	if err := s.client.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	got := releaseNamed(t, s, "many", "the thousand components' count and digest stored", func(rel *v1alpha1.Release) error {
		c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonResourcesOmitted {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	st := got.Status
	if st.ResourceCount != 1000 || len(st.Resources) != 0 || !strings.HasPrefix(st.ResourcesDigest, "sha256:") || len(st.ResourcesDigest) != len("sha256:")+64 {
		t.Fatalf("status: %d resource(s) counted, %d listed, digest %q; want 1000, none, a sha256", st.ResourceCount, len(st.Resources), st.ResourcesDigest)
	}
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.ReleaseRendered)
	if !strings.Contains(c.Message, "1000 resource(s)") || !strings.Contains(c.Message, fmt.Sprint(v1alpha1.MaxStatusResourcesBytes)) {
		t.Fatalf("Rendered message %q: want the count and the bound", c.Message)
	}
	t.Logf("a %d-byte spec rendered 1000 components; status says: %s", size, c.Message)
	if err := s.client.Delete(ctx, rel); err != nil {
		t.Fatal(err)
	}
}

// testBuildOverBudget: a Platform whose build is killed past the time
// budget is a failed build: BuildFailed True naming the budget, Ready
// False, the generation before still served, one kill and no retry.
func testBuildOverBudget(t *testing.T, s *suite) {
	pub := s.wiring.Publisher
	served := pub.Store().Generation()
	killsBefore := kills(t, s)
	spec := acme()
	spec.Overlay = overlayBomb
	gen := updateSpec(t, s, spec)
	p := waitPlatform(t, s, "BuildFailed naming the budget", func(p *v1alpha1.Platform) error {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformBuildFailed)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gen {
			r := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformReady)
			return fmt.Errorf("BuildFailed %+v, Ready %+v, after %v kill(s)", c, r, kills(t, s)-killsBefore)
		}
		return nil
	})
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, controller.ReasonBuildFailed)
	if !strings.Contains(c.Message, "time budget of "+suiteBudget.String()) {
		t.Fatalf("BuildFailed message %q does not name the time budget", c.Message)
	}
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionFalse, controller.ReasonBuildFailed)
	if p.Status.PublishedGeneration != served || pub.Store().Generation() != served {
		t.Fatalf("after a build past the budget: status %d, store %d; want generation %d serving", p.Status.PublishedGeneration, pub.Store().Generation(), served)
	}
	if _, _, err := pub.Render(context.Background(), instanceOf(shop("v1.4.0"))); err != nil {
		t.Fatalf("render while the build past the budget failed: %v", err)
	}
	// The mended spec is published; the spec past the budget was built
	// once.
	gen = updateSpec(t, s, acme())
	ready(t, s, gen)
	if n := kills(t, s) - killsBefore; n != 1 {
		t.Fatalf("kills of the build past the budget: %v, want 1 (no retry)", n)
	}
}

// testLeaderChangeWritesNothing: fifty rendered Releases, a bomb the
// first leader killed past the time budget, and an unchanged Platform;
// leadership passes to a second manager. The new leader publishes the
// Platform and renders no Release: each status, the bomb's too, is a
// verdict the first signed for its inputs, which the new leader trusts;
// it writes no Release, and marks none PlatformNotReady while it has not
// yet published.
func testLeaderChangeWritesNothing(t *testing.T, s *suite) {
	ctx := context.Background()
	const n = 50
	const ns = "fleet"
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	mgrA, wA, err := newManager(s.cfg, filepath.Join(t.TempDir(), "a"), regA)
	if err != nil {
		t.Fatal(err)
	}
	stopA := startManager(mgrA)
	t.Cleanup(func() { _ = stopA() })
	waitServes(t, wA, "the first manager is elected and serves the Platform")
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		rel := newRelease(shop("v1.4.0"), 0)
		rel.Namespace, rel.Name = ns, fmt.Sprintf("r%02d", i)
		if err := s.client.Create(ctx, rel); err != nil {
			t.Fatal(err)
		}
	}
	var list v1alpha1.ReleaseList
	eventually(t, "every Release rendered", func() error {
		if err := s.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		done := 0
		for _, rel := range list.Items {
			if c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered); c != nil && c.Status == metav1.ConditionTrue {
				done++
			}
		}
		if done != n {
			return fmt.Errorf("%d of %d rendered", done, n)
		}
		return nil
	})
	bombRel := newRelease(bomb(), 0)
	bombRel.Namespace, bombRel.Name = ns, "bomb"
	if err := s.client.Create(ctx, bombRel); err != nil {
		t.Fatal(err)
	}
	bombKey := client.ObjectKeyFromObject(bombRel)
	eventually(t, "the bomb killed past the time budget", func() error {
		var rel v1alpha1.Release
		if err := s.client.Get(ctx, bombKey, &rel); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered); c == nil || c.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(c.Message, "time budget") {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	if err := s.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}

	mgrB, wB, err := newManager(s.cfg, filepath.Join(t.TempDir(), "b"), regB)
	if err != nil {
		t.Fatal(err)
	}
	stopB := startManager(mgrB)
	t.Cleanup(func() { _ = stopB() })
	if !mgrB.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the second manager's cache did not sync")
	}
	// Every write to a Release from here on is a status write.
	wc, err := client.NewWithWatch(s.cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	var rl v1alpha1.ReleaseList
	w, err := wc.Watch(ctx, &rl, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if err := stopA(); err != nil {
		t.Fatalf("stop the first manager: %v", err)
	}
	waitServes(t, wB, "the second manager is elected and serves the Platform")
	// The new leader holds every Release's verdict, trusted from the
	// status the first signed, and renders none; a sentinel created after
	// is rendered and written by it.
	var all v1alpha1.ReleaseList
	if err := s.client.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new leader holds the verdict of every Release", func() error {
		if v := wB.Release.Verdicts(); v < len(all.Items) {
			return fmt.Errorf("%d verdicts of %d Releases", v, len(all.Items))
		}
		return nil
	})
	if c := histogramCountIn(t, regB, "leasekit_platform_render_seconds", map[string]string{"result": "ok"}); c != 0 {
		t.Errorf("the new leader rendered %d Release(s) whose signed status holds; want none", c)
	}
	// The new leader's reconcile of the bomb, called here so that its
	// outcome is known: no evaluation, no error, no write.
	eventually(t, "the new leader's reconcile of the bomb", func() error {
		res, err := wB.Release.Reconcile(ctx, ctrl.Request{NamespacedName: bombKey})
		if err != nil {
			t.Fatalf("the new leader's reconcile of the bomb: %v; want none (the status holds the verdict)", err)
		}
		if res.RequeueAfter > 0 {
			return errors.New("waits for the Platform")
		}
		return nil
	})
	if k, o := gathered(t, &suite{registry: regB}, "leasekit_platform_worker_kills_total", map[string]string{"budget": "time"}),
		histogramCountIn(t, regB, "leasekit_platform_render_seconds", map[string]string{"result": "over-budget"}); k != 0 || o != 0 {
		t.Fatalf("the new leader evaluated the bomb again: %v kill(s), %d render(s) over budget; want none", k, o)
	}
	sentinel := newRelease(shop("v1.4.0"), 0)
	sentinel.Namespace, sentinel.Name = ns, "sentinel"
	if err := s.client.Create(ctx, sentinel); err != nil {
		t.Fatal(err)
	}
	writes := map[string]int{}
	notReady := 0
	for sentinelDone := false; !sentinelDone; {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatal("the watch ended")
		}
		rel, isRel := ev.Object.(*v1alpha1.Release)
		if ev.Type != watch.Modified || !isRel {
			continue
		}
		if rel.Name == "sentinel" {
			c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
			sentinelDone = c != nil && c.Status == metav1.ConditionTrue
			continue
		}
		writes[rel.Name]++
		if c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered); c != nil && c.Reason == v1alpha1.ReasonPlatformNotReady {
			notReady++
		}
	}
	total := 0
	for _, c := range writes {
		total += c
	}
	t.Logf("LEADERCHANGE releases=%d status_writes=%d releases_written=%d not_ready_writes=%d", n+1, total, len(writes), notReady)
	if total != 0 {
		t.Fatalf("a leader change wrote %d status(es) to %d of %d Releases (%d PlatformNotReady): %v; want none", total, len(writes), n+1, notReady, writes)
	}
	if err := s.client.Delete(ctx, bombRel); err != nil {
		t.Fatal(err)
	}
}

// histogramCountIn is histogramCount on the registry reg.
func histogramCountIn(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	return histogramCount(t, &suite{registry: reg}, name, labels)
}
