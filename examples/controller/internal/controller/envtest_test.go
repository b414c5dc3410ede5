package controller_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
	"leasekit.dev/platform/platformmodule"
)

// TestEnvtest drives the controller against real API servers. Deploy
// runs on an API server of its own; the steps after it drive one manager
// through a Platform's life on another. They share the singleton and run
// in order; a step that fails stops the rest.
func TestEnvtest(t *testing.T) {
	skipWithoutEnv(t)
	t.Run("Harness", testHarness)
	t.Run("Deploy", testDeploy)
	t.Run("DeploySharded", testDeploySharded)
	t.Run("Failover", testFailover)
	t.Run("Shard", func(t *testing.T) {
		t.Run("server-side", func(t *testing.T) { testShard(t, true, false) })
		t.Run("client-side", func(t *testing.T) { testShard(t, false, false) })
		t.Run("faults", func(t *testing.T) { testShard(t, false, true) })
	})
	var s *suite // started by the first step that runs
	steps := []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"CRDsInstalled", testCRDsInstalled},
		{"LeaderElected", testLeaderElected},
		{"PublishThenRender", testPublishThenRender},
		{"BombOverBudget", testBombOverBudget},
		{"PaddedBomb", testPaddedBomb},
		{"ManyLongKinds", testManyLongKinds},
		{"BuildOverBudget", testBuildOverBudget},
		{"SpecChangeWhileLeased", testSpecChangeWhileLeased},
		{"BrokenSpecKeepsServing", testBrokenSpecKeepsServing},
		{"DeleteForgets", testDeleteForgets},
		{"RecreateThenFailOver", testRecreateThenFailOver},
		{"LeaderChangeWritesNothing", testLeaderChangeWritesNothing},
		{"WriteLogResumes", testWriteLogResumes},
		{"CrowdOfReleases", testCrowdOfReleases},
		{"PlatformBurst", testPlatformBurst},
		{"RecreateWhileRendering", testRecreateWhileRendering},
		{"WorkerKilledFromOutside", testWorkerKilledFromOutside},
		{"StaleCopyIsRefused", testStaleCopyIsRefused},
		{"Scoped", testScoped},
	}
	for _, step := range steps {
		if !t.Run(step.name, func(st *testing.T) {
			if s == nil {
				s = sharedEnv(t, st)
			}
			step.run(st, s)
		}) {
			t.Fatalf("step %s failed; the later steps depend on it", step.name)
		}
	}
}

// testCRDsInstalled: both CRDs are served, and the API server enforces
// their validation: the singleton's name, the spec's patterns and enums.
func testCRDsInstalled(t *testing.T, s *suite) {
	var names []string
	for _, crd := range s.testEnv.CRDs {
		names = append(names, crd.Name)
	}
	slices.Sort(names)
	want := []string{"platforms.examples.leasekit.dev", "releases.examples.leasekit.dev"}
	if !slices.Equal(names, want) {
		t.Fatalf("installed CRDs %q, want %q", names, want)
	}
	ctx := context.Background()
	var list v1alpha1.PlatformList
	if err := s.client.List(ctx, &list); err != nil {
		t.Fatalf("list platforms: %v", err)
	}

	refused := func(what string, p *v1alpha1.Platform, wantMsg string) {
		t.Helper()
		err := s.client.Create(ctx, p)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), wantMsg) {
			t.Errorf("create %s: %v; want Invalid naming %q", what, err, wantMsg)
		}
	}
	accepted := func(what string, p *v1alpha1.Platform) {
		t.Helper()
		if err := s.client.Create(ctx, p, client.DryRunAll); err != nil {
			t.Errorf("create %s (dry run): %v; want it admitted", what, err)
		}
	}
	other := newPlatform(acme(), 0)
	other.Name = "other"
	refused("a second platform", other, "singleton")
	badName := acme()
	badName.Name = "Acme"
	refused("an upper-case platform name", newPlatform(badName, 0), "spec.name")
	badSkew := acme()
	badSkew.SkewPolicy = "Sometimes"
	refused("an unknown skew policy", newPlatform(badSkew, 0), "spec.skewPolicy")
	shortVersion := acme()
	shortVersion.Catalogs[0].Version = "1.4"
	refused("a version that is not semantic", newPlatform(shortVersion, 0), "spec.catalogs[0].version")
	badKind := acme()
	badKind.Catalogs[0].Kinds = []string{"deployment"}
	refused("a kind that is not an upper-case identifier", newPlatform(badKind, 0), "spec.catalogs[0].kinds[0]")

	// What the generator accepts, admission accepts: a catalog without
	// kinds, a version without the 'v' or with prerelease and build
	// metadata. A dry run stores nothing for the later steps.
	badPaths := map[string]string{
		"no major version":                    "example.com/catalogs/web",
		"an upper-case letter":                "Example.com/catalogs/web@v1",
		"no dot in the first element":         "catalogs/web@v1",
		"a device name Windows reserves":      "example.com/con/web@v1",
		"a leading zero in the major version": "example.com/catalogs/web@v01",
		"a space":                             "example.com/catalogs/web app@v1",
	}
	for what, path := range badPaths {
		spec := acme()
		spec.Catalogs[0].Path = path
		refused("a catalog path with "+what, newPlatform(spec, 0), "spec.catalogs[0].path")
	}
	otherMajor := acme()
	otherMajor.Catalogs[0].Version = "v2.0.0"
	refused("a version whose major is not the path's", newPlatform(otherMajor, 0), "spec.catalogs[0].version")
	badValue := acme()
	badValue.Labels = map[string]v1alpha1.LabelValue{"team": "not a value"}
	refused("a label value with spaces", newPlatform(badValue, 0), "spec.labels.team")
	reserved := acme()
	reserved.Name = "aux"
	refused("a platform named as a device Windows reserves", newPlatform(reserved, 0), "spec.name")

	prefixed := acme()
	prefixed.Labels = map[string]v1alpha1.LabelValue{"example.com/team": "platform", "a.b_c-d": ""}
	accepted("label keys with a prefix, and an empty value", newPlatform(prefixed, 0))
	v0 := acme()
	v0.Catalogs[0].Path, v0.Catalogs[0].Version = "example.com/catalogs/web@v0", "0.3.0-rc.1"
	accepted("a v0 catalog", newPlatform(v0, 0))
	noKinds := acme()
	noKinds.Catalogs[0].Kinds = nil
	accepted("a catalog without kinds", newPlatform(noKinds, 0))
	for _, v := range []string{"1.4.0", "v1.4.0-rc.1", "1.4.0+build.5"} {
		spec := acme()
		spec.Catalogs[0].Version = v
		accepted("version "+v, newPlatform(spec, 0))
	}
}

// testLeaderElected: the manager is elected through a coordination.k8s.io
// Lease that names it.
func testLeaderElected(t *testing.T, s *suite) {
	eventually(t, "this manager is elected", func() error {
		select {
		case <-s.elected:
			return nil
		default:
			return errors.New("not elected")
		}
	})
	lease, err := s.kube.CoordinationV1().Leases(leaseNamespace).Get(context.Background(), leaseID, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the leader election Lease: %v", err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || !strings.HasPrefix(*lease.Spec.HolderIdentity, host+"_") {
		t.Fatalf("Lease %s/%s held by %q, want this manager (%s_…)", leaseNamespace, leaseID, ptr.Deref(lease.Spec.HolderIdentity, ""), host)
	}
}

// testPublishThenRender: a created Platform is published, its generation
// directory holds the module, a Release renders against it, an event says
// so and the metrics count it.
func testPublishThenRender(t *testing.T, s *suite) {
	ctx := context.Background()
	p := newPlatform(acme(), 0)
	if err := s.client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	gen := p.Generation
	ready(t, s, gen)
	if _, err := os.Stat(filepath.Join(s.wiring.Publisher.Layout().Dir(gen), "platform.cue")); err != nil {
		t.Fatalf("generation %d's module: %v", gen, err)
	}

	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseKey.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := s.client.Create(ctx, newRelease(shop("v1.4.0"), 0)); err != nil {
		t.Fatal(err)
	}
	rel := renderedAgainst(t, s, gen)
	if len(rel.Status.Resources) != 2 || rel.Status.Instance != "shop" {
		t.Fatalf("release status %+v, want shop's two resources", rel.Status)
	}

	eventually(t, "a Published event for the platform", func() error {
		list, err := s.kube.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Platform" && e.Reason == controller.ReasonPublished && strings.Contains(e.Note, fmt.Sprintf("generation %d", gen)) {
				return nil
			}
		}
		return fmt.Errorf("%d events, none Published for generation %d", len(list.Items), gen)
	})

	m := s.wiring.Metrics
	if n := testutil.ToFloat64(m.Publishes.WithLabelValues("published")); n < 1 {
		t.Errorf("publishes_total{outcome=published} = %v, want at least 1", n)
	}
	if v := gathered(t, s, "leasekit_platform_generation", nil); v != float64(gen) {
		t.Errorf("leasekit_platform_generation = %v, want %d", v, gen)
	}
	if v := gathered(t, s, "leasekit_platform_generations_on_disk", nil); v != 1 {
		t.Errorf("leasekit_platform_generations_on_disk = %v, want 1", v)
	}
	if n := histogramCount(t, s, "leasekit_platform_render_seconds", map[string]string{"result": "ok"}); n < 1 {
		t.Errorf("render_seconds{result=ok} count %d, want at least 1", n)
	}
	if n := histogramCount(t, s, "leasekit_platform_publish_phase_seconds", map[string]string{"phase": "build"}); n < 1 {
		t.Errorf("publish_phase_seconds{phase=build} count %d, want at least 1", n)
	}
}

// testBombOverBudget: a Release whose render is killed past the time
// budget gets RenderFailed naming the budget, while another Release,
// created after it, renders; the kill is counted in the metrics.
func testBombOverBudget(t *testing.T, s *suite) {
	ctx := context.Background()
	bombRel := newRelease(bomb(), 0)
	bombRel.Name = "bomb"
	if err := s.client.Create(ctx, bombRel); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the bomb being rendered", func() error {
		if busy := gathered(t, s, "leasekit_platform_workers_busy", nil); busy < 1 {
			return fmt.Errorf("%v workers busy", busy)
		}
		return nil
	})
	other := newRelease(shop("v1.4.0"), 0)
	other.Name = "other"
	if err := s.client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	condition := func(name string, check func(*metav1.Condition) error) {
		eventually(t, "release "+name, func() error {
			var rel v1alpha1.Release
			if err := s.client.Get(ctx, client.ObjectKey{Namespace: releaseKey.Namespace, Name: name}, &rel); err != nil {
				return err
			}
			return check(meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered))
		})
	}
	condition("other", func(c *metav1.Condition) error {
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	condition("bomb", func(c *metav1.Condition) error {
		if c == nil || c.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(c.Message, "time budget of "+suiteBudget.String()) {
			return fmt.Errorf("Rendered %+v, want RenderFailed naming the time budget", c)
		}
		return nil
	})
	if n := gathered(t, s, "leasekit_platform_worker_kills_total", map[string]string{"budget": "time"}); n != 1 {
		t.Errorf("worker_kills_total{budget=time} = %v, want 1", n)
	}
	if n := histogramCount(t, s, "leasekit_platform_render_seconds", map[string]string{"result": "over-budget"}); n != 1 {
		t.Errorf("render_seconds{result=over-budget} count %d, want 1", n)
	}
	for _, rel := range []*v1alpha1.Release{bombRel, other} {
		if err := s.client.Delete(ctx, rel); err != nil {
			t.Fatal(err)
		}
	}
}

// testSpecChangeWhileLeased: a spec change publishes the next generation
// while a render holds the old one; the old directory survives until the
// lease is released, then the reclaim loop removes it.
func testSpecChangeWhileLeased(t *testing.T, s *suite) {
	pub := s.wiring.Publisher
	held, release, ok := pub.Store().Lease()
	if !ok {
		t.Fatal("no platform to lease")
	}
	defer release()
	old := held.Generation
	oldDir := held.Dir
	reclaimsBefore := histogramCount(t, s, "leasekit_platform_reclaim_delay_seconds", nil)
	prunesBefore := gathered(t, s, "leasekit_platform_prunes_total", nil)

	next := acme()
	next.Catalogs[0].Version = "v1.5.0"
	gen := updateSpec(t, s, next)
	ready(t, s, gen)
	renderedAgainst(t, s, gen)

	if _, err := os.Stat(filepath.Join(oldDir, "platform.cue")); err != nil {
		t.Fatalf("the leased generation %d's directory was touched: %v", old, err)
	}
	if st := pub.Stats(); !slices.Contains(onDisk(st), old) || leaseCounts(st)[old] != 1 {
		t.Fatalf("stats %+v: want generation %d on disk with one lease", st, old)
	}
	if v := gathered(t, s, "leasekit_platform_leases", map[string]string{"generation": fmt.Sprint(old)}); v != 1 {
		t.Fatalf("leasekit_platform_leases{generation=%d} = %v, want 1", old, v)
	}
	if v := gathered(t, s, "leasekit_platform_generations_on_disk", nil); v != 2 {
		t.Fatalf("leasekit_platform_generations_on_disk = %v, want 2 (the leased and the current)", v)
	}

	release()
	gone(t, oldDir)
	// The removal is counted, and OnReclaim called, just after it.
	eventually(t, "the reclaim is counted", func() error {
		if n := histogramCount(t, s, "leasekit_platform_reclaim_delay_seconds", nil); n <= reclaimsBefore {
			return fmt.Errorf("reclaim_delay_seconds count %d, want more than %d", n, reclaimsBefore)
		}
		if v := gathered(t, s, "leasekit_platform_prunes_total", nil); v <= prunesBefore {
			return fmt.Errorf("prunes_total %v, want more than %v", v, prunesBefore)
		}
		return nil
	})
}

// testBrokenSpecKeepsServing: a spec that does not build sets BuildFailed
// with the positions of the conflict; the previous generation keeps
// serving renders; a mended spec is published.
func testBrokenSpecKeepsServing(t *testing.T, s *suite) {
	ctx := context.Background()
	pub := s.wiring.Publisher
	served := pub.Store().Generation()
	failedBefore := testutil.ToFloat64(s.wiring.Metrics.Publishes.WithLabelValues("build-failed"))

	broken := acme()
	broken.Catalogs[0].Version = "v1.5.0"
	broken.Overlay = "name: \"other\"\n"
	gen := updateSpec(t, s, broken)
	p := waitPlatform(t, s, "BuildFailed with positions", func(p *v1alpha1.Platform) error {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformBuildFailed)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gen {
			return fmt.Errorf("BuildFailed %+v", c)
		}
		if !strings.Contains(c.Message, controller.OverlayFile+":2:") || !strings.Contains(c.Message, "platform.cue:") {
			return fmt.Errorf("BuildFailed message %q lacks the positions", c.Message)
		}
		return nil
	})
	wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionFalse, controller.ReasonBuildFailed)
	if p.Status.PublishedGeneration != served || pub.Store().Generation() != served {
		t.Fatalf("after a failed build: status %d, store %d; want generation %d serving", p.Status.PublishedGeneration, pub.Store().Generation(), served)
	}
	out, rec, err := pub.Render(ctx, instanceOf(shop("v1.4.0")))
	if err != nil || rec.Generation != served || len(out.Resources) != 2 {
		t.Fatalf("render during a failed build: %v, generation %d", err, rec.Generation)
	}
	if n := testutil.ToFloat64(s.wiring.Metrics.Publishes.WithLabelValues("build-failed")); n <= failedBefore {
		t.Errorf("publishes_total{outcome=build-failed} = %v, want more than %v", n, failedBefore)
	}
	if on := onDisk(pub.Stats()); !slices.Equal(on, []int64{served}) {
		t.Errorf("generations on disk after a failed build: %v, want only the served %d", on, served)
	}

	mended := acme()
	mended.Catalogs[0].Version = "v1.6.0"
	gen = updateSpec(t, s, mended)
	ready(t, s, gen)
	renderedAgainst(t, s, gen)
}

// testDeleteForgets: deleting the Platform empties the store; the leased
// directory survives until released and is removed after; the Release
// says the platform is not ready.
func testDeleteForgets(t *testing.T, s *suite) {
	ctx := context.Background()
	pub := s.wiring.Publisher
	held, release, ok := pub.Store().Lease()
	if !ok {
		t.Fatal("no platform to lease")
	}
	defer release()
	if err := s.client.Delete(ctx, newPlatform(acme(), 0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the store is empty after the delete", func() error {
		if g := pub.Store().Generation(); g != 0 {
			return fmt.Errorf("store serves generation %d", g)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(held.Dir, "platform.cue")); err != nil {
		t.Fatalf("the leased directory went with the delete: %v", err)
	}
	waitRelease(t, s, "the release waits for a platform", func(rel *v1alpha1.Release) error {
		c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if c == nil || c.Reason != v1alpha1.ReasonPlatformNotReady {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	release()
	gone(t, held.Dir)
	eventually(t, "no generation counted on disk", func() error {
		if v := gathered(t, s, "leasekit_platform_generations_on_disk", nil); v != 0 {
			return fmt.Errorf("leasekit_platform_generations_on_disk = %v after the delete, want 0", v)
		}
		return nil
	})
}

// testRecreateThenFailOver: a Platform created again after its delete is
// published from generation 1 again. A second replica, not elected, leaves
// its platform directory untouched and serves nothing; when the leader
// stops, it is elected through the Lease, boots (emptying its directory)
// and publishes the Platform from the object alone.
func testRecreateThenFailOver(t *testing.T, s *suite) {
	ctx := context.Background()
	// The second replica's directory holds what an earlier process of its
	// own left: a generation directory.
	dir2 := filepath.Join(t.TempDir(), "platform")
	earlier := platform.NewPublisher(dir2, platform.PublisherOptions{NoSync: true})
	if err := earlier.Boot(); err != nil {
		t.Fatal(err)
	}
	files, err := platformmodule.Generate(platformmodule.Input{Name: "earlier"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := earlier.Publish(ctx, 7, files, 0); err != nil {
		t.Fatal(err)
	}
	sentinel := earlier.Layout().Dir(7)
	mgr2, w2, err := newManager(s.cfg, dir2, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	stop2 := startManager(mgr2)
	t.Cleanup(func() {
		if err := stop2(); err != nil {
			t.Errorf("second manager: %v", err)
		}
	})
	if !mgr2.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the second manager's cache did not sync")
	}

	p := newPlatform(acme(), 0)
	if err := s.client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if p.Generation != 1 {
		t.Fatalf("a recreated Platform has generation %d, want 1", p.Generation)
	}
	ready(t, s, 1)
	renderedAgainst(t, s, 1)

	select {
	case <-mgr2.Elected():
		t.Fatal("two replicas elected at once")
	default:
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Fatalf("a replica that is not elected touched its platform directory: %v", err)
	}
	if _, err := w2.Publisher.Publish(ctx, 1, map[string][]byte{"x": nil}, 0); !errors.Is(err, platform.ErrNotBooted) {
		t.Fatalf("publish on a replica that is not elected: %v, want ErrNotBooted", err)
	}
	if g := w2.Publisher.Store().Generation(); g != 0 {
		t.Fatalf("a replica that is not elected serves generation %d", g)
	}
	lease, err := s.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := *lease.Spec.HolderIdentity

	if err := s.stopManager(); err != nil {
		t.Fatalf("stop the leader: %v", err)
	}
	eventually(t, "the second replica is elected", func() error {
		select {
		case <-mgr2.Elected():
			return nil
		default:
			return errors.New("not elected")
		}
	})
	eventually(t, "the new leader serves the Platform", func() error {
		if g := w2.Publisher.Store().Generation(); g != 1 {
			return fmt.Errorf("serves generation %d", g)
		}
		return nil
	})
	if _, err := os.Stat(sentinel); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the new leader booted without emptying its platform directory: %v", err)
	}
	lease, err = s.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h == first {
		t.Fatalf("the Lease still names the stopped leader %q", first)
	}
	if _, _, err := w2.Publisher.Render(ctx, instanceOf(shop("v1.4.0"))); err != nil {
		t.Fatalf("render on the new leader: %v", err)
	}
}

// ready waits until the Platform is Ready at generation gen.
func ready(t *testing.T, s *suite, gen int64) {
	t.Helper()
	waitPlatform(t, s, fmt.Sprintf("generation %d published", gen), func(p *v1alpha1.Platform) error {
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformReady)
		if c == nil || c.Status != metav1.ConditionTrue || p.Status.PublishedGeneration != gen {
			return fmt.Errorf("published %d, Ready %+v", p.Status.PublishedGeneration, c)
		}
		return nil
	})
}

// renderedAgainst waits until the Release has rendered against gen.
func renderedAgainst(t *testing.T, s *suite, gen int64) *v1alpha1.Release {
	t.Helper()
	return waitRelease(t, s, fmt.Sprintf("the release rendered against generation %d", gen), func(rel *v1alpha1.Release) error {
		c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if c == nil || c.Status != metav1.ConditionTrue || rel.Status.PlatformGeneration != gen {
			return fmt.Errorf("platform generation %d, Rendered %+v", rel.Status.PlatformGeneration, c)
		}
		return nil
	})
}

func waitPlatform(t *testing.T, s *suite, what string, check func(*v1alpha1.Platform) error) *v1alpha1.Platform {
	t.Helper()
	var p v1alpha1.Platform
	eventually(t, what, func() error {
		if err := s.client.Get(context.Background(), platformKey, &p); err != nil {
			return err
		}
		return check(&p)
	})
	return &p
}

func waitRelease(t *testing.T, s *suite, what string, check func(*v1alpha1.Release) error) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	eventually(t, what, func() error {
		if err := s.client.Get(context.Background(), releaseKey, &rel); err != nil {
			return err
		}
		return check(&rel)
	})
	return &rel
}

// updateSpec replaces the Platform's spec and returns its new generation.
func updateSpec(t *testing.T, s *suite, spec v1alpha1.PlatformSpec) int64 {
	t.Helper()
	var p v1alpha1.Platform
	if err := s.client.Get(context.Background(), platformKey, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec = spec
	if err := s.client.Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
	return p.Generation
}

// gone waits until dir no longer exists.
func gone(t *testing.T, dir string) {
	t.Helper()
	eventually(t, dir+" removed", func() error {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("stat: %v", err)
		}
		return nil
	})
}

// gathered returns the value of the gauge or counter name with labels from
// the suite's registry; 0 when it has no such series.
func gathered(t *testing.T, s *suite, name string, labels map[string]string) float64 {
	t.Helper()
	m := series(t, s, name, labels)
	switch {
	case m == nil:
		return 0
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
}

// histogramCount returns the sample count of the histogram name with labels.
func histogramCount(t *testing.T, s *suite, name string, labels map[string]string) uint64 {
	t.Helper()
	m := series(t, s, name, labels)
	if m == nil || m.Histogram == nil {
		return 0
	}
	return m.Histogram.GetSampleCount()
}

func series(t *testing.T, s *suite, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := s.registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}
