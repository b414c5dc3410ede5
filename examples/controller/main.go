// Command controller runs the example platform controller: it publishes the
// cluster's Platform through a leasekit platform Publisher and renders
// Releases against it. See README.md.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
)

// LeaderElectionID names the coordination.k8s.io Lease the replicas elect
// a leader with.
const LeaderElectionID = "platform-controller.examples.leasekit.dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		platformDir = flag.String("platform-dir", "", "directory the controller owns for the generated platform modules; emptied at start (required)")
		noSync      = flag.Bool("platform-dir-no-sync", false, "skip fsync in the platform directory, for a disk wiped at boot (an emptyDir)")
		metricsAddr = flag.String("metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
		probeAddr   = flag.String("health-probe-bind-address", ":8081", "address the health probe endpoint binds to")
		leaderElect = flag.Bool("leader-elect", true, "elect a leader before reconciling, so that several replicas are safe; --leader-elect=false only for a single replica")
		timeout     = flag.Duration("reconcile-timeout", 2*time.Minute, "bound on each reconcile; a publish waiting for renders to release a directory gives up and retries with backoff")
		leaderNS    = flag.String("leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
		zapOpts     = zap.Options{Development: false}
	)
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if *platformDir == "" {
		return fmt.Errorf("--platform-dir is required")
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: *leaderNS,
		// The Publisher's directory is per process and emptied at boot, so a
		// replica that steps down has nothing to hand over: release the
		// Lease at once on shutdown so the next leader need not wait for it
		// to expire.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{ReconciliationTimeout: *timeout},
	})
	if err != nil {
		return err
	}
	if _, err := controller.Setup(mgr, controller.Config{
		PlatformDir: *platformDir,
		NoSync:      *noSync,
		Logger:      slog.New(logr.ToSlogHandler(ctrl.Log.WithName("publisher"))),
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
