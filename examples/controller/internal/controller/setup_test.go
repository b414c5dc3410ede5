package controller

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

var _ manager.LeaderElectionRunnable = &electedOnly{}

func TestPublisherNeedsLeaderElection(t *testing.T) {
	if !(&electedOnly{}).NeedLeaderElection() {
		t.Fatal("the Publisher would start on a replica that is not elected")
	}
}

// Readiness follows the Publisher's boot on the elected replica; a standby
// is ready.
func TestReadyOnceThePublisherBooted(t *testing.T) {
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	elected := make(chan struct{})
	w := &Wiring{Publisher: pub, runnable: &electedOnly{pub: pub}, elected: elected}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("a standby replica: Ready = %v, want ready", err)
	}
	close(elected)
	if err := w.Ready(nil); err == nil || !strings.Contains(err.Error(), "not booted") {
		t.Fatalf("elected, not booted: Ready = %v, want an error saying the publisher has not booted", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Start boots, then its reclaim loop returns at once
	if err := w.runnable.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("elected and booted: Ready = %v, want ready", err)
	}
}

// heldRenders is an evaluator whose renders each wait for a value on
// release, counting those begun.
type heldRenders struct {
	platform.Evaluator
	release chan struct{}
	begun   atomic.Int32
}

func (h *heldRenders) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	h.begun.Add(1)
	<-h.release
	return kernel.RenderOutput{}, nil
}

// The gate on an evaluator in this process lets one render evaluate at a
// time: a second waits for the first to end, and one whose ctx ends while
// it waits returns ctx's error without evaluating.
func TestInProcessRendersEvaluateOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &heldRenders{Evaluator: kernel.New(), release: make(chan struct{})}
		e := &evaluating{Evaluator: h, turns: make(chan struct{}, 1)}
		errs := make(chan error, 3)
		render := func(ctx context.Context) {
			_, err := e.Render(ctx, kernel.RenderInput{})
			errs <- err
		}
		go render(context.Background())
		go render(context.Background())
		synctest.Wait()
		if n := h.begun.Load(); n != 1 {
			t.Fatalf("%d renders evaluating at once, want 1", n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go render(ctx)
		synctest.Wait()
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) || h.begun.Load() != 1 {
			t.Fatalf("a render whose ctx ended while it waited: %v, %d begun; want context.Canceled and 1 begun", err, h.begun.Load())
		}
		h.release <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := h.begun.Load(); n != 2 {
			t.Fatalf("after the first render ended, %d begun, want 2", n)
		}
		h.release <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	})
}

// An elected replica whose status key was never read (its Secret is
// unreadable: RBAC, the API server) cannot render: every Release waits
// for the key. It is not ready until a load succeeded, so that a rollout
// does not replace a replica that renders with one that cannot.
func TestReadyOnceTheStatusKeyLoaded(t *testing.T) {
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	elected := make(chan struct{})
	close(elected)
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, DefaultStatusKeyName, errors.New("RBAC: not allowed"))
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return forbidden
		},
	}).Build()
	sk := &StatusKey{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: "default", Name: DefaultStatusKeyName}}
	w := &Wiring{Publisher: pub, runnable: &electedOnly{pub: pub}, elected: elected, StatusKey: sk}
	w.runnable.booted.Store(true)
	if err := sk.Load(context.Background()); !apierrors.IsForbidden(err) {
		t.Fatalf("Load = %v, want the Forbidden of the Secret's read", err)
	}
	if err := w.Ready(nil); err == nil || !strings.Contains(err.Error(), "status key") {
		t.Fatalf("elected and booted, the status key unread: Ready = %v, want an error naming the status key", err)
	}
	readable := fake.NewClientBuilder().WithScheme(scheme).Build()
	sk.Reader, sk.Writer = readable, readable
	if err := sk.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("elected, booted, the status key loaded: Ready = %v, want ready", err)
	}
}
