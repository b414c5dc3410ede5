package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform/isolate"
)

// The tests in this file are the attacks of a tenant who may create only
// Releases, and of the machine the controller runs on, against the
// reconcilers on the fake client.

// budget is the workers' time budget in the tests that wait one out: a
// worker's start and a platform's build keep well within it on a loaded
// machine, and a bomb goes far past it.
const budget = 10 * time.Second

// errTooLarge is what etcd answers a write past its request size.
var errTooLarge = apierrors.NewInternalError(errors.New("etcdserver: request is too large"))

// TestReleaseDecidedRenderIsNotRunAgainAfterAFailedWrite: the render of a
// bomb is killed past the time budget, and its status cannot be written.
// The reconcile returns the write's error, and the retries write again
// without rendering again: one kill, whatever the number of retries. Once
// the write goes through, the Release holds RenderFailed and the error is
// terminal.
func TestReleaseDecidedRenderIsNotRunAgainAfterAFailedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a time budget")
	}
	// A budget that a worker's start and the platform's build keep well
	// within on a loaded machine, and the bomb goes far past.
	f, ws := bombFixture(t, budget)
	var mu sync.Mutex
	refuse := true
	writeFails := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return refuse
	}
	f.release.Client = interceptor.NewClient(f.client.(client.WithWatch), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if writeFails() {
				return errTooLarge
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if writeFails() {
				return errTooLarge
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	for i := range 3 {
		_, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
		if err == nil || errors.Is(err, reconcile.TerminalError(nil)) || !strings.Contains(err.Error(), "request is too large") {
			t.Fatalf("reconcile %d with the status write refused: %v; want the write's error, retried", i, err)
		}
	}
	if s := ws.Stats(); s.KilledTime != 1 {
		t.Fatalf("kills past the time budget: %d over 3 reconciles whose writes failed; want 1 (a decided render is not run again)", s.KilledTime)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	_, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
	if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, isolate.ErrBudget) {
		t.Fatalf("reconcile once the write goes through: %v; want a terminal error wrapping the budget's", err)
	}
	var rel v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &rel); err != nil {
		t.Fatal(err)
	}
	c := wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if !strings.Contains(c.Message, "time budget of "+budget.String()) {
		t.Fatalf("RenderFailed message %q does not name the time budget", c.Message)
	}
	if s := ws.Stats(); s.KilledTime != 1 {
		t.Fatalf("kills past the time budget: %d, want 1", s.KilledTime)
	}
}

// TestReleaseWorkerKilledFromOutsideIsRetried: a worker killed while it
// renders (the OOM killer, here SIGKILL) is no verdict on the Release:
// the reconcile returns an error to retry with backoff, not a terminal
// one, and writes no RenderFailed.
func TestReleaseWorkerKilledFromOutsideIsRetried(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to find the worker process")
	}
	// A budget far past the test's life: only the SIGKILL ends the bomb.
	f, ws := bombFixture(t, time.Hour)
	done := make(chan error, 1)
	go func() {
		_, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey})
		done <- err
	}()
	eventually(t, "the bomb being rendered", func() error {
		if ws.Stats().Busy < 1 {
			return errors.New("no worker busy")
		}
		return nil
	})
	pids := workerProcesses(t)
	if len(pids) != 1 {
		t.Fatalf("worker processes %v, want the one busy", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("reconcile whose worker was killed: %v; want an error retried with backoff", err)
	}
	if _, ok := errors.AsType[*isolate.WorkerError](err); !ok {
		t.Fatalf("reconcile whose worker was killed: %v; want the WorkerError", err)
	}
	var rel v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &rel); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered); c != nil {
		t.Fatalf("a worker killed from outside left Rendered %s/%s %q; want no verdict written", c.Status, c.Reason, c.Message)
	}
}

// workerProcesses returns the processes this test binary started again as
// kernel workers: its children running its executable.
func workerProcesses(t *testing.T) []int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// staleClient is a client whose next Get of one key, once armed, returns
// an older copy of the object: a cache a few writes behind.
type staleClient struct {
	client.Client
	mu    sync.Mutex
	stale *v1alpha1.Release
}

func (c *staleClient) arm(old *v1alpha1.Release) {
	c.mu.Lock()
	c.stale = old.DeepCopy()
	c.mu.Unlock()
}

func (c *staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	old := c.stale
	c.stale = nil
	c.mu.Unlock()
	if rel, ok := obj.(*v1alpha1.Release); ok && old != nil && key == client.ObjectKeyFromObject(old) {
		old.DeepCopyInto(rel)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestReleaseStaleCacheKeepsStatusConsistent: a Release rendered, then
// marked PlatformNotReady when the platform went; the platform comes
// back, and the reconcile reads a copy from before the PlatformNotReady
// write. The stored status ends consistent: Rendered with the instance
// and both resources, as the render found them.
func TestReleaseStaleCacheKeepsStatusConsistent(t *testing.T) {
	first := newPlatform(acme(), 1)
	first.UID = "first"
	f := newFixture(t, true, first, newRelease(shop("v1.4.0"), 1))
	stale := &staleClient{Client: f.client}
	f.release.Client = stale
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	old := f.reconcileRelease(t)
	wantCondition(t, old.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)

	if err := f.client.Delete(context.Background(), newPlatform(acme(), 1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady)

	again := newPlatform(acme(), 1)
	again.UID = "second"
	if err := f.client.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	// One reconcile: the status write changes no generation, so no event
	// brings another.
	stale.arm(old)
	if _, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	var stored v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &stored); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ReleaseRendered)
	if c == nil || c.Status != metav1.ConditionTrue || stored.Status.Instance != "shop" || len(stored.Status.Resources) != 2 || stored.Status.PlatformGeneration != 1 {
		t.Fatalf("stored status after a reconcile from a stale copy: Rendered %+v, instance %q, %d resource(s), platform %d; want Rendered True, shop, 2, 1",
			c, stored.Status.Instance, len(stored.Status.Resources), stored.Status.PlatformGeneration)
	}
}

// TestReleaseWaitsWhileThePlatformIsUnpublished: a Platform object exists,
// and this process has not yet published it (a new leader, a restart). The
// Release reconcile writes nothing and waits; once the platform is
// published the Release renders.
func TestReleaseWaitsWhileThePlatformIsUnpublished(t *testing.T) {
	f := newFixture(t, true, newPlatform(acme(), 1), newRelease(shop("v1.4.0"), 1))
	var before v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &before); err != nil {
		t.Fatal(err)
	}
	if _, err := f.release.Reconcile(context.Background(), ctrl.Request{NamespacedName: releaseKey}); err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Logf("reconcile before the publish: %v", err)
	}
	var after v1alpha1.Release
	if err := f.client.Get(context.Background(), releaseKey, &after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		c := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ReleaseRendered)
		t.Fatalf("the Release was written before its existing Platform was published: Rendered %+v", c)
	}
	if ev := f.drain(); len(ev) != 0 {
		t.Fatalf("events %q before the publish, want none", ev)
	}
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	rel := f.reconcileRelease(t)
	wantCondition(t, rel.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
}

// overlayBomb is an overlay of a few bytes whose evaluation never ends on
// any machine (ten billion steps, as bomb's) and holds little memory while
// it runs, so that only the time budget stops it.
const overlayBomb = "import \"list\"\n\nr: list.Range(0, 100000, 1)\nx: [for i in r for j in r if i < 0 {i}]\n"

// TestPlatformBuildOverBudgetIsABuildFailure: a spec whose build is killed
// past the time budget is a failed build: BuildFailed True naming the
// budget, Ready False, a terminal error, the generation before still
// served.
func TestPlatformBuildOverBudgetIsABuildFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a time budget")
	}
	ws := &isolate.Workers{Size: 1, Timeout: budget, Memory: 8 << 30}
	defer ws.Close()
	f := newFixtureWith(t, ws, true, newPlatform(acme(), 1))
	if _, _, err := f.reconcilePlatform(t); err != nil {
		t.Fatal(err)
	}
	spec := acme()
	spec.Overlay = overlayBomb
	f.setSpec(t, spec, 2)
	p, res, err := f.reconcilePlatform(t)
	if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, isolate.ErrBudget) && !strings.Contains(err.Error(), "time budget") || !res.IsZero() {
		t.Fatalf("reconcile of a build past the time budget: %v, %+v; want a terminal error naming the budget", err, res)
	}
	c := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, controller.ReasonBuildFailed)
	if !strings.Contains(c.Message, "time budget of "+budget.String()) {
		t.Fatalf("BuildFailed message %q does not name the time budget", c.Message)
	}
	r := wantCondition(t, p.Status.Conditions, v1alpha1.PlatformReady, metav1.ConditionFalse, controller.ReasonBuildFailed)
	if strings.Contains(r.Message, "retrying") {
		t.Fatalf("Ready message %q: a budget is not retried", r.Message)
	}
	if g := f.pub.Store().Generation(); g != 1 || p.Status.PublishedGeneration != 1 {
		t.Fatalf("serving %d (status %d) after a build past the budget; want generation 1 still", g, p.Status.PublishedGeneration)
	}
	if s := ws.Stats(); s.KilledTime != 1 {
		t.Fatalf("kills %d, want 1", s.KilledTime)
	}
}
