package controller_test

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
)

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
