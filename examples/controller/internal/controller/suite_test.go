package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform/isolate"
)

// The envtest suite runs a real kube-apiserver and etcd, a real manager
// with leader election and both reconcilers, against the CRDs generated
// under config/crd. It runs when KUBEBUILDER_ASSETS names the directory
// holding the two binaries, and is skipped otherwise.

// suiteBudget is the workers' time budget in the envtest suite: a
// worker's start, a build and a render of a thousand components keep well
// within it on a loaded machine, and a bomb goes far past it.
const suiteBudget = 10 * time.Second

const (
	leaseNamespace = "default"
	leaseID        = "platform-controller.examples.leasekit.dev"
)

// A suite is one running API server with the CRDs installed and a manager
// elected through the Lease, owned by one run of a test.
type suite struct {
	testEnv  *envtest.Environment
	cfg      *rest.Config
	client   client.Client
	kube     kubernetes.Interface
	registry *prometheus.Registry
	wiring   *controller.Wiring
	dir      string
	elected  <-chan struct{}

	// stopManager stops the manager and returns its error; it may be
	// called more than once.
	stopManager func() error
}

// startSuite starts the API server, installs the CRDs and starts a
// manager with leader election, the Publisher and both reconcilers.
func startSuite() (_ *suite, stop func() error, err error) {
	t0 := time.Now()
	s := &suite{
		testEnv:  crdEnvironment(),
		registry: prometheus.NewRegistry(),
	}
	s.cfg, err = s.testEnv.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start the API server: %w", err)
	}
	fmt.Fprintf(os.Stderr, "envtest: API server up in %v\n", time.Since(t0).Round(time.Millisecond))
	cleanup := []func() error{s.testEnv.Stop}
	fail := func(err error) (*suite, func() error, error) {
		for i := len(cleanup) - 1; i >= 0; i-- {
			_ = cleanup[i]()
		}
		return nil, nil, err
	}

	scheme := newScheme()
	s.client, err = client.New(s.cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fail(err)
	}
	s.kube, err = kubernetes.NewForConfig(s.cfg)
	if err != nil {
		return fail(err)
	}
	s.dir, err = os.MkdirTemp("", "platform-controller-")
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() error { return os.RemoveAll(s.dir) })

	mgr, wiring, err := newManager(s.cfg, filepath.Join(s.dir, "platform"), s.registry)
	if err != nil {
		return fail(err)
	}
	s.wiring = wiring
	s.elected = mgr.Elected()
	s.stopManager = startManager(mgr)
	cleanup = append(cleanup, s.stopManager)
	stop = func() error {
		var first error
		for i := len(cleanup) - 1; i >= 0; i-- {
			if err := cleanup[i](); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return s, stop, nil
}

// suiteWorkers returns the suite's worker pool: one worker per core, the
// suite's time budget, a memory budget out of the bomb's reach, so that
// only the time budget stops it.
func suiteWorkers() *isolate.Workers {
	return &isolate.Workers{Timeout: suiteBudget, Memory: 8 << 30}
}

// skipWithoutEnv skips t unless KUBEBUILDER_ASSETS is set.
func skipWithoutEnv(t *testing.T) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("envtest binaries not set up; run: KUBEBUILDER_ASSETS=$(tools/envtest/assets.sh) go test ./examples/controller/...")
	}
}

// sharedEnv starts an API server and a manager for the subtests of parent
// from its subtest st, stopped when parent ends.
func sharedEnv(parent, st *testing.T) *suite {
	st.Helper()
	s, stop, err := startSuite()
	if err != nil {
		st.Fatalf("envtest: %v", err)
	}
	parent.Cleanup(func() {
		if err := stop(); err != nil {
			parent.Errorf("envtest stop: %v", err)
		}
	})
	return s
}
