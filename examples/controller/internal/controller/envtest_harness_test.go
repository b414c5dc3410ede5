package controller_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/examples/controller/internal/shard"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
)

// The envtest harness: every envtest test starts its API servers,
// managers and ring members here, and so alike. It promises:
//   - an API server started through startAPIServer waits minutes, not
//     seconds, to start and stop (patient), fails its test at once when it
//     does not start, and reports a failure to stop as its test's error;
//     crdEnvironment's serves the example's CRDs before Start returns;
//   - a scenario (startScenario) is an API server of one test's own, the
//     Platform singleton at acme() and generation 1, and an empty
//     Namespace for its Releases, which createReleases fills with the
//     fleet of tenComponents;
//   - a manager (newManager, newManagerWith, newManagerOn) is elected
//     through the suite's Lease, skips controller-name validation so that
//     replicas share one process, serves no metrics or probe port, and
//     closes its workers when it stops; startManager's stop is safe to
//     call again and returns the manager's error each time;
//   - a ring member (newMember) joins ringName in leaseNamespace with the
//     Shard subtests' short timing.
// testHarness checks the promises a test could not see broken.

// crdEnvironment returns an environment, patient, installing the CRDs of
// config/crd and refusing to start without them.
func crdEnvironment() *envtest.Environment {
	return patient(&envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd")},
		ErrorIfCRDPathMissing: true,
	})
}

// startAPIServer starts env's API server and etcd, failing t when they do
// not start, and returns the admin config and the function that stops
// them, which reports a failure to stop as t's error.
func startAPIServer(t *testing.T, env *envtest.Environment) (*rest.Config, func()) {
	t.Helper()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start the API server: %v", err)
	}
	return cfg, func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the API server: %v", err)
		}
	}
}

// A scenario is an API server of one test's own, its CRDs installed, with
// the Platform singleton at acme() and an empty Namespace for the
// scenario's Releases.
type scenario struct {
	cfg    *rest.Config     // the API server's admin config
	client client.WithWatch // on cfg, with newScheme
	ns     string           // the Releases' Namespace
	stop   func()           // stops the API server; see startAPIServer
}

// startScenario starts a scenario whose Releases are in ns. configure,
// when not nil, is applied to the environment before it starts (a feature
// gate of the API server). The caller stops it when the test's run ends,
// so that the next run has the machine to itself: t fails at once when
// the scenario does not start, with the API server stopped.
func startScenario(t *testing.T, ns string, configure func(*envtest.Environment)) *scenario {
	t.Helper()
	env := crdEnvironment()
	if configure != nil {
		configure(env)
	}
	sc := &scenario{ns: ns}
	sc.cfg, sc.stop = startAPIServer(t, env)
	ok := false
	defer func() {
		if !ok {
			sc.stop()
		}
	}()
	var err error
	sc.client, err = client.NewWithWatch(sc.cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := sc.client.Create(ctx, newPlatform(acme(), 0)); err != nil {
		t.Fatal(err)
	}
	if err := sc.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	ok = true
	return sc
}

// createReleases creates n Releases r000, r001, … in the scenario's
// Namespace, Release i the ten components of tenComponents(i).
func (sc *scenario) createReleases(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		rel := &v1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Namespace: sc.ns, Name: fmt.Sprintf("r%03d", i)},
			Spec:       v1alpha1.ReleaseSpec{Files: tenComponents(i)},
		}
		if err := sc.client.Create(context.Background(), rel); err != nil {
			t.Fatal(err)
		}
	}
}

// rendered lists the scenario's Releases and returns nil when n are
// Rendered against platform generation gen.
func (sc *scenario) rendered(n int, gen int64) error {
	var list v1alpha1.ReleaseList
	if err := sc.client.List(context.Background(), &list, client.InNamespace(sc.ns)); err != nil {
		return err
	}
	done := 0
	for _, rel := range list.Items {
		cond := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if cond != nil && cond.Status == metav1.ConditionTrue && rel.Status.PlatformGeneration == gen {
			done++
		}
	}
	if done != n {
		return fmt.Errorf("%d of %d", done, n)
	}
	return nil
}

// newMember returns the ring member id of ringName, its Lease in ns,
// reaching the API server through kube, with the Shard subtests' timing.
func newMember(t *testing.T, kube kubernetes.Interface, ns, id string, log logr.Logger) *shard.Member {
	t.Helper()
	member, err := shard.New(shard.Config{
		Ring: ringName, Namespace: ns, Identity: id,
		LeaseDuration: ringLease, RenewPeriod: ringRenew,
		Client: kube, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return member
}

// waitServes waits until w's Publisher serves a generation: what a
// manager elected and booted does first.
func waitServes(t *testing.T, w *controller.Wiring, what string) {
	t.Helper()
	eventually(t, what, func() error {
		if g := w.Publisher.Store().Generation(); g == 0 {
			return errors.New("serves nothing")
		}
		return nil
	})
}

// newManager returns a manager with leader election on and the example's
// Setup, its Publisher owning dir, its metrics registered with reg, its
// standby cold. Builds and renders run in worker processes (suiteWorkers),
// stopped with the manager.
func newManager(cfg *rest.Config, dir string, reg *prometheus.Registry) (ctrl.Manager, *controller.Wiring, error) {
	return newManagerWith(cfg, dir, reg, suiteWorkers(), false)
}

// patient returns env waiting minutes, not envtest's seconds, for the
// control plane to start and stop and for the CRDs to be served: on a
// loaded machine only a failure ends those waits.
func patient(env *envtest.Environment) *envtest.Environment {
	env.ControlPlaneStartTimeout = 5 * time.Minute
	env.ControlPlaneStopTimeout = 5 * time.Minute
	env.CRDInstallOptions.MaxTime = 5 * time.Minute
	return env
}

// newManagerWith is newManager evaluating with ws, closed when the manager
// stops, and with warm, a warm standby.
func newManagerWith(cfg *rest.Config, dir string, reg *prometheus.Registry, ws *isolate.Workers, warm bool) (ctrl.Manager, *controller.Wiring, error) {
	return newManagerOn(cfg, dir, reg, ws, warm)
}

// newManagerOn is newManager evaluating with ev (an *isolate.Workers is
// closed when the manager stops), and with warm, a warm standby.
func newManagerOn(cfg *rest.Config, dir string, reg *prometheus.Registry, ev platform.Evaluator, warm bool) (ctrl.Manager, *controller.Wiring, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        newScheme(),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              leaseID,
		LeaderElectionNamespace:       leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		// A second manager in this process, a replica, reuses the
		// controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, err
	}
	if ws, ok := ev.(*isolate.Workers); ok {
		if err := mgr.Add(closeOnStop{ws}); err != nil {
			return nil, nil, err
		}
	}
	w, err := controller.Setup(mgr, controller.Config{PlatformDir: dir, Registerer: reg, NoSync: true, Evaluator: ev, WarmStandby: warm})
	if err != nil {
		return nil, nil, err
	}
	return mgr, w, nil
}

// closeOnStop closes the kernel's workers when the manager stops, elected
// or not.
type closeOnStop struct{ ws *isolate.Workers }

func (c closeOnStop) Start(ctx context.Context) error {
	<-ctx.Done()
	return c.ws.Close()
}

func (closeOnStop) NeedLeaderElection() bool { return false }

// startManager starts mgr and returns the function that stops it and
// returns its error, safe to call more than once.
func startManager(mgr ctrl.Manager) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return sync.OnceValue(func() error {
		cancel()
		return <-done
	})
}

// testHarness checks the scenario's start-up where a scenario test would
// pass with it broken: configure runs before the API server starts; the
// Platform is acme() at generation 1 and the Namespace holds no Release;
// createReleases creates the fleet of tenComponents, by name; rendered
// counts only Rendered Releases of the generation asked; and stop stops
// the API server.
func testHarness(t *testing.T) {
	ctx := context.Background()
	configured := false
	sc := startScenario(t, "harness", func(env *envtest.Environment) {
		configured = env.Config == nil // set once the server has started
	})
	stopped := false
	defer func() {
		if !stopped {
			sc.stop()
		}
	}()
	if !configured {
		t.Error("configure did not run before the API server started")
	}
	var p v1alpha1.Platform
	if err := sc.client.Get(ctx, platformKey, &p); err != nil {
		t.Fatalf("the scenario's Platform: %v", err)
	}
	if p.Generation != 1 || p.Spec.Name != acme().Name || p.Spec.Catalogs[0].Version != acme().Catalogs[0].Version {
		t.Errorf("the scenario's Platform: generation %d, spec %+v; want acme() at generation 1", p.Generation, p.Spec)
	}
	var list v1alpha1.ReleaseList
	if err := sc.client.List(ctx, &list, client.InNamespace(sc.ns)); err != nil || len(list.Items) != 0 {
		t.Fatalf("the scenario's Namespace holds %d Releases (%v), want none", len(list.Items), err)
	}
	if err := sc.rendered(0, 1); err != nil {
		t.Errorf("rendered(0, 1) with no Release: %v, want nil", err)
	}

	const n = 3
	sc.createReleases(t, n)
	if err := sc.client.List(ctx, &list, client.InNamespace(sc.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("createReleases(%d) made %d Releases", n, len(list.Items))
	}
	for i, rel := range list.Items { // by name
		if want := fmt.Sprintf("r%03d", i); rel.Name != want || rel.Spec.Files["fleet.cue"] != tenComponents(i)["fleet.cue"] {
			t.Errorf("Release %d: %s, want %s with tenComponents(%d)", i, rel.Name, want, i)
		}
	}
	if err := sc.rendered(n, 1); err == nil {
		t.Error("rendered: nil with no Release rendered")
	}
	rel := list.Items[0]
	meta.SetStatusCondition(&rel.Status.Conditions, metav1.Condition{Type: v1alpha1.ReleaseRendered, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRendered, ObservedGeneration: rel.Generation})
	rel.Status.PlatformGeneration = 1
	if err := sc.client.Status().Update(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	if err := sc.rendered(1, 1); err != nil {
		t.Errorf("rendered(1, 1) with one Release rendered against 1: %v", err)
	}
	if err := sc.rendered(1, 2); err == nil {
		t.Error("rendered(1, 2): nil with the one Release rendered against 1")
	}

	stopped = true
	sc.stop()
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sc.client.Get(short, platformKey, &p); err == nil {
		t.Error("the API server answers after stop")
	}
}
