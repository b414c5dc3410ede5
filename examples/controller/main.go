// Command controller runs the example platform controller: it publishes the
// cluster's Platform through a leasekit platform Publisher and renders
// Releases against it. See README.md.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/examples/controller/internal/shard"
	"leasekit.dev/examples/internal/size"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// LeaderElectionID names the coordination.k8s.io Lease the replicas elect
// a leader with.
const LeaderElectionID = "platform-controller.examples.leasekit.dev"

func main() {
	// The kernel's workers are this executable started again.
	isolate.Main()
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controller: %v\nRun with -h for the flags.\n", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	platformDir string
	noSync      bool
	metricsAddr string
	metricsTLS  bool
	probeAddr   string
	leaderElect bool
	warm        bool
	timeout     time.Duration
	leaderNS    string
	zap         zap.Options

	renderTimeout time.Duration // a build's or render's time budget in a worker
	renderMemory  int64         // a worker's memory budget, in bytes
	renderWorkers int           // the most worker processes at once; 0: GOMAXPROCS
	inProcess     bool          // evaluate in this process, with no budgets

	ring         string        // the ring's name; "": no ring, leader election
	ringNS       string        // the namespace of the ring's Leases
	ringIdentity string        // this replica's identity in the ring
	ringLease    time.Duration // a member's lease duration
	ringRenew    time.Duration // a member's renew period

	statusKey   string // the name of the status key's Secret
	statusKeyNS string // its namespace
}

// usage heads the -h output.
const usage = `Usage: go run ./examples/controller --platform-dir DIR [flags]

Runs the example platform controller against the cluster of the current
kubeconfig context (or the in-cluster configuration): publishes the
Platform named cluster through a platform Publisher on DIR and renders
Releases against it. See examples/controller/README.md.

Flags (one dash or two):
`

// parseFlags parses args; it refuses arguments that are not flags and a
// missing --platform-dir. With -h it prints the usage and returns
// flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.platformDir, "platform-dir", "", "directory the controller owns for the generated platform modules; emptied at start (required)")
	fs.BoolVar(&o.noSync, "platform-dir-no-sync", false, "skip fsync in the platform directory, for a disk wiped at boot (an emptyDir)")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "address the metrics endpoint binds to; 0 disables it")
	fs.BoolVar(&o.metricsTLS, "metrics-secure", true, "serve metrics over HTTPS, each scrape authenticated (TokenReview) and authorized (SubjectAccessReview, get on /metrics); false serves plain HTTP to anyone who reaches the port")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the health probe endpoint binds to")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader before reconciling, so that several replicas are safe; --leader-elect=false only for a single replica")
	fs.DurationVar(&o.timeout, "reconcile-timeout", 2*time.Minute, "bound on each reconcile, a render's wait for a free worker included: past it the reconcile fails and is retried with backoff")
	fs.BoolVar(&o.warm, "warm-standby", true, "keep a replica that is not elected warm: it follows the Platform into its own --platform-dir and renders every Release into its memo, writing nothing, so that on election it only writes status; false: a standby starts from nothing when elected")
	fs.StringVar(&o.leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's namespace)")
	o.renderTimeout = isolate.DefaultTimeout
	fs.DurationVar(&o.renderTimeout, "render-timeout", o.renderTimeout, "time budget of each build and render: past it, the worker process evaluating it is killed and it fails (a Release so killed gets RenderFailed and is not rendered again until its spec changes)")
	o.renderMemory = isolate.DefaultMemory
	fs.Var((*size.Flag)(&o.renderMemory), "render-memory", "memory budget of each worker process evaluating builds and renders, a `size` such as 256MiB or 1GiB: past it, the worker is killed and its build or render fails")
	fs.IntVar(&o.renderWorkers, "render-workers", 0, "the most worker processes evaluating at once (0: GOMAXPROCS)")
	fs.BoolVar(&o.inProcess, "in-process", false, "evaluate builds and renders in the controller's own process, with no time or memory budget: only for trusted Releases")
	fs.StringVar(&o.ring, "ring", "", "split the Releases among the replicas through a ring of this name (a DNS label): each replica holds a coordination.k8s.io Lease of its own, renders and writes the Releases of its part of the hash space, and publishes the Platform itself; leader election and the standby are off. Empty: one elected replica writes everything")
	fs.StringVar(&o.ringNS, "ring-namespace", "", "namespace of the ring's Leases (default: --leader-election-namespace, else the pod's namespace)")
	fs.StringVar(&o.ringIdentity, "ring-identity", "", "this replica's identity in the ring, unique among its replicas (default: the host name, the pod's name)")
	fs.DurationVar(&o.ringLease, "ring-lease-duration", 15*time.Second, "how long a member's Lease holds after its last renewal seen: a replica gone is replaced in its part after this, plus a renew period; it stops writing itself a renew period before")
	fs.DurationVar(&o.ringRenew, "ring-renew-period", 2*time.Second, "how often a member renews its Lease and looks at the ring; at most a third of --ring-lease-duration")
	fs.StringVar(&o.statusKey, "status-key-secret", controller.DefaultStatusKeyName, "name of the Secret holding the key the Releases' status verdicts are signed with (created on first start when absent; delete it to rotate the key); read with get, so grant get on this name only")
	fs.StringVar(&o.statusKeyNS, "status-key-namespace", "", "namespace of the status key's Secret (default: --leader-election-namespace, else the pod's namespace)")
	o.zap.BindFlags(fs)
	// controller-runtime's --kubeconfig, read by ctrl.GetConfig.
	if f := flag.CommandLine.Lookup("kubeconfig"); f != nil {
		fs.Var(f.Value, f.Name, f.Usage)
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every input is a flag", fs.Arg(0))
	}
	if o.platformDir == "" {
		return o, errors.New("--platform-dir is required")
	}
	switch {
	case o.renderTimeout <= 0:
		return o, fmt.Errorf("--render-timeout %v: must be positive", o.renderTimeout)
	case o.renderMemory < isolate.MinMemory:
		return o, fmt.Errorf("--render-memory %d bytes: must be at least 32MiB, what a worker holds before its first render", o.renderMemory)
	case o.renderWorkers < 0:
		return o, fmt.Errorf("--render-workers %d: must be positive, or 0 for GOMAXPROCS", o.renderWorkers)
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("--reconcile-timeout %v: must be positive", o.timeout)
	}
	if o.ring != "" {
		switch {
		case o.ringRenew <= 0:
			return o, fmt.Errorf("--ring-renew-period %v: must be positive", o.ringRenew)
		case o.ringLease < 3*o.ringRenew:
			return o, fmt.Errorf("--ring-lease-duration %v: must be at least three --ring-renew-period (%v)", o.ringLease, 3*o.ringRenew)
		}
	}
	return o, nil
}

// metricsOptions returns the metrics server's options: with --metrics-secure,
// HTTPS on a self-signed certificate, each request authenticated and
// authorized by the API server, and HTTP/1.1 only (HTTP/2's stream resets
// cost a server more than a client, CVE-2023-44487).
func metricsOptions(o options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsAddr}
	if o.metricsTLS {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	return m
}

func run(o options) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))

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
	var member *shard.Member
	var cacheOpts cache.Options
	leaderElect := o.leaderElect
	keyNS, err := namespaceOf(o.statusKeyNS, o.leaderNS, "--status-key-namespace")
	if err != nil {
		return err
	}
	if o.ring != "" {
		// The cache makes its informers once Setup asks for them, after
		// the member below exists (it needs the manager's recorder).
		cacheOpts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			return controller.RingInformer(member)(lw, obj, resync, idx)
		}
		leaderElect = false
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   cacheOpts,
		Scheme:                  scheme,
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.leaderNS,
		// The Publisher's directory is per process and emptied at boot, so a
		// replica that steps down has nothing to hand over: release the
		// Lease at once on shutdown so the next leader need not wait for it
		// to expire.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{ReconciliationTimeout: o.timeout},
	})
	if err != nil {
		return err
	}
	if o.ring != "" {
		member, err = newMember(o, cfg, mgr.GetEventRecorder("ring"))
		if err != nil {
			return err
		}
	}
	var k platform.Evaluator = kernel.New()
	if !o.inProcess {
		ws := &isolate.Workers{Size: o.renderWorkers, Timeout: o.renderTimeout, Memory: o.renderMemory}
		defer ws.Close()
		k = ws
	}
	w, err := controller.Setup(mgr, controller.Config{
		PlatformDir: o.platformDir,
		NoSync:      o.noSync,
		Evaluator:   k,
		WarmStandby: o.warm,
		Ring:        member,
		StatusKey:   types.NamespacedName{Namespace: keyNS, Name: o.statusKey},
		Logger:      slog.New(logr.ToSlogHandler(ctrl.Log.WithName("publisher"))),
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once elected, the Publisher booted and the status key read; a
	// warm standby once booted, the key read and caught up with the
	// Platform, a cold one at once.
	if err := mgr.AddReadyzCheck("publisher", w.Ready); err != nil {
		return err
	}
	// With a ring: ready while this replica holds its Lease and renewed it
	// in time to write; not ready before it joined, while another
	// incarnation of its identity holds the Lease, while the API server
	// refuses it the Leases, or once a renewal is overdue.
	if member != nil {
		if err := mgr.AddReadyzCheck("ring", member.Ready); err != nil {
			return err
		}
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// namespaceOf returns ns, else fallback, else the pod's namespace; flag
// names ns in the error outside a pod.
func namespaceOf(ns, fallback, flag string) (string, error) {
	if ns == "" {
		ns = fallback
	}
	if ns == "" {
		b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return "", fmt.Errorf("%s is required outside a pod: %w", flag, err)
		}
		ns = strings.TrimSpace(string(b))
	}
	return ns, nil
}

// newMember returns this replica's ring membership from the flags; its
// events go to rec.
func newMember(o options, cfg *rest.Config, rec events.EventRecorder) (*shard.Member, error) {
	ns, err := namespaceOf(o.ringNS, o.leaderNS, "--ring-namespace")
	if err != nil {
		return nil, err
	}
	id := o.ringIdentity
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--ring-identity: %w", err)
		}
		id = strings.ToLower(host)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return shard.New(shard.Config{
		Ring: o.ring, Namespace: ns, Identity: id,
		LeaseDuration: o.ringLease, RenewPeriod: o.ringRenew,
		Client: kube, Logger: ctrl.Log.WithName("ring"), Recorder: rec,
	})
}
