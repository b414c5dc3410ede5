package controller_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
)

// The steps in this file are the attacks the controller held against a
// real API server, kept so that it keeps holding them: a crowd of
// Releases created at once, a burst of Platform changes, the Platform
// deleted and created again while renders run; and two that did not
// hold: a worker killed from outside in the middle of a render, and a
// status written from a stale copy of the Release.
//
// Each step starts from no Release and leaves none behind: a platform
// change renders every Release there is, so the steps' renders stay within
// their own. Each starts with the Platform's spec acme(). The suite's manager is stopped first if it still runs; each
// step but the last runs a manager of its own, elected through the Lease.

// crowdSize, burstUpdates: the counts of the attacks as they were made.
const (
	crowdSize    = 300
	burstUpdates = 50
	// fleetSize is how many Releases watch a burst or a recreate: enough
	// that renders run while the Platform changes under them.
	fleetSize = 20
)

// A leader is the manager elected for one step.
type leader struct {
	wiring *controller.Wiring
	ws     *isolate.Workers
	reg    *prometheus.Registry
	stop   func() error // stops the manager; safe to call again
}

// renders returns the number of renders of this leader that ended with
// result (ok, failed, over-budget, not-ready).
func (l *leader) renders(t *testing.T, result string) uint64 {
	t.Helper()
	return histogramCountIn(t, l.reg, "leasekit_platform_render_seconds", map[string]string{"result": result})
}

// startLeader stops the suite's manager if it still runs, starts a
// manager evaluating with ws, stopped when t ends, and waits until it is
// elected and serves the Platform.
func startLeader(t *testing.T, s *suite, ws *isolate.Workers) *leader {
	t.Helper()
	l := startLeaderOn(t, s, ws)
	l.ws = ws
	return l
}

// startLeaderOn is startLeader evaluating with ev.
func startLeaderOn(t *testing.T, s *suite, ev platform.Evaluator) *leader {
	t.Helper()
	if err := s.stopManager(); err != nil {
		t.Fatalf("stop the suite's manager: %v", err)
	}
	l := &leader{reg: prometheus.NewRegistry()}
	mgr, w, err := newManagerOn(s.cfg, filepath.Join(t.TempDir(), "platform"), l.reg, ev, false)
	if err != nil {
		t.Fatal(err)
	}
	l.wiring = w
	stop := startManager(mgr)
	l.stop = stop
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("the step's manager: %v", err)
		}
	})
	waitServes(t, w, "the step's manager is elected and serves the Platform")
	return l
}

// noReleases deletes every Release and waits until none is left.
func noReleases(t *testing.T, s *suite) {
	t.Helper()
	ctx := context.Background()
	var list v1alpha1.ReleaseList
	if err := s.client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if err := s.client.Delete(ctx, &list.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	eventually(t, "no Release left", func() error {
		if err := s.client.List(ctx, &list); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d Release(s) left", len(list.Items))
		}
		return nil
	})
}

// createReleases creates the namespace ns if it does not exist and n
// Releases of shop in it, named r000 on, all at once: a few dozen
// requests in flight.
func createReleases(t *testing.T, s *suite, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rel := newRelease(shop("v1.4.0"), 0)
			rel.Namespace, rel.Name = ns, fmt.Sprintf("r%03d", i)
			errs[i] = s.client.Create(ctx, rel)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("create %d Releases: %v", n, err)
	}
}

// allRendered waits until each of the n Releases in ns is Rendered=True
// for its spec against platform generation gen, and returns them.
func allRendered(t *testing.T, s *suite, ns string, n int, gen int64) []v1alpha1.Release {
	t.Helper()
	var list v1alpha1.ReleaseList
	eventually(t, fmt.Sprintf("the %d Releases in %s rendered against generation %d", n, ns, gen), func() error {
		if err := s.client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		done := 0
		for _, rel := range list.Items {
			c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
			if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rel.Generation && rel.Status.PlatformGeneration == gen {
				done++
			}
		}
		if len(list.Items) != n || done != n {
			return fmt.Errorf("%d of %d Releases rendered", done, len(list.Items))
		}
		return nil
	})
	return list.Items
}

// A writeLog holds every status write to the Releases of one namespace
// from the resourceVersion it was started at. The API server sends each
// write as one Modified event; a write that changes the generation is the
// spec's, and is left out. The API server may end a watch at any time (a
// watcher too slow for a burst of events is closed with no error event),
// so a watch that ends is resumed from the last resourceVersion seen, as
// an informer's reflector does: no event is lost, and one the API server
// can no longer replay ends the log with its error.
type writeLog struct {
	mu      sync.Mutex
	writes  map[string][]*metav1.Condition // per Release, its Rendered condition after each write
	err     error                          // why the log ended early
	resumed int                            // watches resumed after the API server ended one
}

// watchWrites starts a writeLog of ns from resourceVersion rv, stopped
// when t ends.
func watchWrites(t *testing.T, s *suite, ns, rv string) *writeLog {
	t.Helper()
	return watchWritesFor(t, s, ns, rv, 0)
}

// watchWritesFor is watchWrites whose every watch the API server ends
// after seconds, unless zero.
func watchWritesFor(t *testing.T, s *suite, ns, rv string, seconds int64) *writeLog {
	t.Helper()
	var timeout *int64
	if seconds > 0 {
		timeout = &seconds
	}
	wc, err := client.NewWithWatch(s.cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watchFrom := func(rv string) (watch.Interface, error) {
		var rl v1alpha1.ReleaseList
		return wc.Watch(ctx, &rl, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: timeout}})
	}
	w, err := watchFrom(rv)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &writeLog{writes: map[string][]*metav1.Condition{}}
	fail := func(err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err == nil {
			l.err = err
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		gens := map[string]int64{} // per Release, its generation in the last event
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					w.Stop()
					fail(fmt.Errorf("the watch from resourceVersion %s: %w", rv, apierrors.FromObject(ev.Object)))
					return
				}
				rel, ok := ev.Object.(*v1alpha1.Release)
				if !ok {
					continue
				}
				rv = rel.ResourceVersion
				if ev.Type == watch.Bookmark {
					continue
				}
				prev, seen := gens[rel.Name]
				gens[rel.Name] = rel.Generation
				if ev.Type != watch.Modified || seen && prev != rel.Generation {
					continue
				}
				l.mu.Lock()
				l.writes[rel.Name] = append(l.writes[rel.Name], meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered))
				l.mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			l.mu.Lock()
			l.resumed++
			l.mu.Unlock()
			var err error
			if w, err = watchFrom(rv); err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("resume the watch from resourceVersion %s: %w", rv, err))
				}
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		w.Stop()
	})
	return l
}

// snapshot returns the writes seen so far, or the watch's error.
func (l *writeLog) snapshot() (map[string][]*metav1.Condition, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]*metav1.Condition, len(l.writes))
	for name, conds := range l.writes {
		out[name] = slices.Clone(conds)
	}
	return out, l.err
}

// resumes returns how many watches the log resumed.
func (l *writeLog) resumes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resumed
}

// settle creates a Release named sentinel in ns and waits until the log
// holds its Rendered=True write: the writes the controller made before it
// are in the log. It returns the log's writes but the sentinel's.
func (l *writeLog) settle(t *testing.T, s *suite, ns string) map[string][]*metav1.Condition {
	t.Helper()
	return l.settleOn(t, s, ns, "sentinel")
}

// settleOn is settle with a sentinel of that name.
func (l *writeLog) settleOn(t *testing.T, s *suite, ns, name string) map[string][]*metav1.Condition {
	t.Helper()
	sentinel := newRelease(shop("v1.4.0"), 0)
	sentinel.Namespace, sentinel.Name = ns, name
	if err := s.client.Create(context.Background(), sentinel); err != nil {
		t.Fatal(err)
	}
	var writes map[string][]*metav1.Condition
	eventually(t, "the sentinel's write seen", func() error {
		var err error
		if writes, err = l.snapshot(); err != nil {
			t.Fatalf("the watch of %s: %v", ns, err)
		}
		for _, c := range writes[name] {
			if c != nil && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		stored := "not found"
		var got v1alpha1.Release
		if err := s.client.Get(context.Background(), client.ObjectKeyFromObject(sentinel), &got); err == nil {
			stored = "without a Rendered condition"
			if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReleaseRendered); c != nil {
				stored = fmt.Sprintf("Rendered=%s (%s)", c.Status, c.Reason)
			}
		}
		return fmt.Errorf("sentinel written %d time(s) in the log, not yet Rendered; the API server holds it %s", len(writes[name]), stored)
	})
	delete(writes, name)
	if n := l.resumes(); n > 0 {
		t.Logf("the write log resumed %d watch(es) the API server ended", n)
	}
	return writes
}

// count returns the writes in writes, and those whose Rendered reason is
// reason.
func count(writes map[string][]*metav1.Condition, reason string) (all, with int) {
	for _, conds := range writes {
		all += len(conds)
		for _, c := range conds {
			if c != nil && c.Reason == reason {
				with++
			}
		}
	}
	return all, with
}

// listVersion returns the resourceVersion of the Releases in ns now.
func listVersion(t *testing.T, s *suite, ns string) string {
	t.Helper()
	var list v1alpha1.ReleaseList
	if err := s.client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.ResourceVersion
}

// platformIs makes spec the Platform's: it creates the Platform, or
// replaces the spec of the one there is.
func platformIs(t *testing.T, s *suite, spec v1alpha1.PlatformSpec) {
	t.Helper()
	err := s.client.Create(context.Background(), newPlatform(spec, 0))
	if apierrors.IsAlreadyExists(err) {
		setPlatformSpec(t, s, spec)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
}

// setPlatformSpec replaces the Platform's spec, read again after each
// conflict with the controller's status writes, and returns the new
// generation.
func setPlatformSpec(t *testing.T, s *suite, spec v1alpha1.PlatformSpec) int64 {
	t.Helper()
	ctx := context.Background()
	for {
		var p v1alpha1.Platform
		if err := s.client.Get(ctx, platformKey, &p); err != nil {
			t.Fatal(err)
		}
		p.Spec = spec
		err := s.client.Update(ctx, &p)
		if err == nil {
			return p.Generation
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("update the Platform: %v", err)
		}
	}
}

// testWriteLogResumes: the log the later steps count writes with misses
// none when the API server ends its watch. Each watch here ends after a
// second; a status written after the first resume is in the log.
func testWriteLogResumes(t *testing.T, s *suite) {
	const ns = "resume"
	ctx := context.Background()
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	probe := newRelease(shop("v1.4.0"), 0)
	probe.Namespace, probe.Name = ns, "probe"
	if err := s.client.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	l := watchWritesFor(t, s, ns, listVersion(t, s, ns), 1)
	eventually(t, "a watch ended by the API server and resumed", func() error {
		if _, err := l.snapshot(); err != nil {
			t.Fatalf("the write log: %v", err)
		}
		if l.resumes() == 0 {
			return errors.New("no watch resumed yet")
		}
		return nil
	})
	cond := metav1.Condition{Type: v1alpha1.ReleaseRendered, Status: metav1.ConditionUnknown, Reason: "LogProbe", Message: "a write after a resume"}
	for {
		var rel v1alpha1.Release
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(probe), &rel); err != nil {
			t.Fatal(err)
		}
		cond.ObservedGeneration = rel.Generation
		meta.SetStatusCondition(&rel.Status.Conditions, cond)
		err := s.client.Status().Update(ctx, &rel)
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	eventually(t, "the write after a resume in the log", func() error {
		writes, err := l.snapshot()
		if err != nil {
			t.Fatalf("the write log: %v", err)
		}
		for _, c := range writes["probe"] {
			if c != nil && c.Reason == "LogProbe" {
				return nil
			}
		}
		return fmt.Errorf("%d write(s) of the probe, none LogProbe; %d watch(es) resumed", len(writes["probe"]), l.resumes())
	})
	noReleases(t, s)
}

// testCrowdOfReleases: 300 Releases created at once. Each ends
// Rendered=True against the platform served, with one status write.
func testCrowdOfReleases(t *testing.T, s *suite) {
	const ns = "crowd"
	noReleases(t, s)
	platformIs(t, s, acme())
	l := startLeader(t, s, suiteWorkers())
	gen := l.wiring.Publisher.Store().Generation()
	if err := s.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	log := watchWrites(t, s, ns, listVersion(t, s, ns))
	createReleases(t, s, ns, crowdSize)
	allRendered(t, s, ns, crowdSize, gen)
	writes := log.settle(t, s, ns)

	total, _ := count(writes, "")
	var wrong []string
	for i := range crowdSize {
		name := fmt.Sprintf("r%03d", i)
		conds := writes[name]
		if len(conds) != 1 || conds[0] == nil || conds[0].Status != metav1.ConditionTrue {
			wrong = append(wrong, fmt.Sprintf("%s: %d write(s)", name, len(conds)))
		}
	}
	t.Logf("CROWD releases=%d status_writes=%d renders_ok=%d renders_failed=%d", crowdSize, total, l.renders(t, "ok"), l.renders(t, "failed"))
	if len(wrong) > 0 {
		t.Fatalf("%d of %d Releases not written exactly once, Rendered=True: %s", len(wrong), crowdSize, strings.Join(wrong[:min(len(wrong), 10)], "; "))
	}
	noReleases(t, s)
}

// testPlatformBurst: 50 changes of the Platform's spec, one after the
// other as fast as the API server takes them, while Releases render. Every
// Release ends rendered against the last generation, and none is ever
// written PlatformNotReady: a platform is served throughout.
func testPlatformBurst(t *testing.T, s *suite) {
	const ns = "burst"
	noReleases(t, s)
	platformIs(t, s, acme())
	l := startLeader(t, s, suiteWorkers())
	createReleases(t, s, ns, fleetSize)
	allRendered(t, s, ns, fleetSize, l.wiring.Publisher.Store().Generation())
	log := watchWrites(t, s, ns, listVersion(t, s, ns))
	publishedBefore := gathered(t, &suite{registry: l.reg}, "leasekit_platform_publishes_total", map[string]string{"outcome": "published"})
	rendersBefore := l.renders(t, "ok")

	var last int64
	for i := range burstUpdates {
		spec := acme()
		spec.Labels["burst"] = v1alpha1.LabelValue(fmt.Sprintf("u%02d", i))
		last = setPlatformSpec(t, s, spec)
	}
	ready(t, s, last)
	allRendered(t, s, ns, fleetSize, last)
	writes := log.settle(t, s, ns)

	total, notReady := count(writes, v1alpha1.ReasonPlatformNotReady)
	published := gathered(t, &suite{registry: l.reg}, "leasekit_platform_publishes_total", map[string]string{"outcome": "published"}) - publishedBefore
	t.Logf("BURST updates=%d last_generation=%d publishes=%v releases=%d renders_ok=%d status_writes=%d not_ready_writes=%d",
		burstUpdates, last, published, fleetSize, l.renders(t, "ok")-rendersBefore, total, notReady)
	if notReady != 0 {
		t.Fatalf("a burst of Platform changes wrote %d Release status(es) PlatformNotReady; want none", notReady)
	}
	noReleases(t, s)
}

// testRecreateWhileRendering: the Platform deleted and created again,
// with other content, while the Releases render against a change of it.
// Every Release ends rendered against the Platform created again, and
// nothing is left held: no lease, no busy worker, only the served
// generation on disk.
func testRecreateWhileRendering(t *testing.T, s *suite) {
	const ns = "recreate"
	ctx := context.Background()
	noReleases(t, s)
	platformIs(t, s, acme())
	l := startLeader(t, s, suiteWorkers())
	pub := l.wiring.Publisher
	createReleases(t, s, ns, fleetSize)
	allRendered(t, s, ns, fleetSize, pub.Store().Generation())
	log := watchWrites(t, s, ns, listVersion(t, s, ns))

	// A change of the Platform brings every Release back; once the first
	// of those renders is done, the Platform goes.
	rendersBefore := l.renders(t, "ok")
	changed := acme()
	changed.Catalogs[0].Version = "v1.4.1"
	gen := setPlatformSpec(t, s, changed)
	if gen == 1 {
		t.Fatal("the Platform changed is at generation 1; the step tells it from the one created again by its generation 1")
	}
	eventually(t, fmt.Sprintf("renders against generation %d running", gen), func() error {
		if n := l.renders(t, "ok"); n == rendersBefore {
			return errors.New("no render yet")
		}
		return nil
	})
	if err := s.client.Delete(ctx, newPlatform(acme(), 0)); err != nil {
		t.Fatal(err)
	}
	renderedBeforeDelete := l.renders(t, "ok") - rendersBefore
	eventually(t, "the Platform gone", func() error {
		var p v1alpha1.Platform
		if err := s.client.Get(ctx, platformKey, &p); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
	// The Platform created again carries an older web catalog than the
	// Releases require: under SkewWarn each renders with a warning naming
	// it, which no render against the Platform deleted had.
	again := acme()
	again.Catalogs[0].Version = "v1.3.0"
	p := newPlatform(again, 0)
	if err := s.client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	ready(t, s, p.Generation)
	rels := allRendered(t, s, ns, fleetSize, p.Generation)
	for _, rel := range rels {
		if len(rel.Status.Diagnostics) != 1 || !strings.Contains(rel.Status.Diagnostics[0], "v1.3.0") {
			t.Fatalf("Release %s: diagnostics %q; want the skew against the Platform created again (v1.3.0)", rel.Name, rel.Status.Diagnostics)
		}
	}
	eventually(t, "nothing held", func() error {
		st := pub.Stats()
		for g, n := range leaseCounts(st) {
			if n != 0 {
				return fmt.Errorf("generation %d leased %d time(s)", g, n)
			}
		}
		if !slices.Equal(onDisk(st), []int64{p.Generation}) {
			return fmt.Errorf("generations on disk %v, want only %d", onDisk(st), p.Generation)
		}
		if busy := l.ws.Stats().Busy; busy != 0 {
			return fmt.Errorf("%d worker(s) busy", busy)
		}
		return nil
	})
	writes := log.settle(t, s, ns)
	total, notReady := count(writes, v1alpha1.ReasonPlatformNotReady)
	t.Logf("RECREATE releases=%d rendered_before_delete=%d status_writes=%d not_ready_writes=%d",
		fleetSize, renderedBeforeDelete, total, notReady)
	noReleases(t, s)
}

// testWorkerKilledFromOutside: the worker rendering a Release is killed
// from outside (the OOM killer, here SIGKILL). That says nothing of the
// spec: the Release is rendered again, with backoff, and no RenderFailed
// is ever written. The time budget is an hour, so that only the kills end
// the bomb; once its spec is mended it renders.
func testWorkerKilledFromOutside(t *testing.T, s *suite) {
	const ns = "killed"
	ctx := context.Background()
	noReleases(t, s)
	platformIs(t, s, acme())
	ws := &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 8 << 30}
	l := startLeader(t, s, ws)
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	log := watchWrites(t, s, ns, listVersion(t, s, ns))
	neverFailed := func() {
		t.Helper()
		writes, err := log.snapshot()
		if err != nil {
			t.Fatalf("the watch of %s: %v", ns, err)
		}
		for _, c := range writes["bomb"] {
			if c != nil && c.Reason == v1alpha1.ReasonRenderFailed {
				t.Fatalf("a worker killed from outside was written as a verdict: Rendered %s/%s %q", c.Status, c.Reason, c.Message)
			}
		}
	}
	kill := func(what string) {
		t.Helper()
		var pids []int
		eventually(t, what+" being rendered", func() error {
			neverFailed()
			if busy := ws.Stats().Busy; busy != 1 {
				return fmt.Errorf("%d worker(s) busy", busy)
			}
			if pids = workerProcesses(t); len(pids) != 1 {
				return fmt.Errorf("worker processes %v, want the one busy", pids)
			}
			return nil
		})
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}

	rel := newRelease(bomb(), 0)
	rel.Namespace, rel.Name = ns, "bomb"
	if err := s.client.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	kill("the bomb")
	// The render that failed is counted before its reconcile returns; a
	// busy worker after it is the render again.
	eventually(t, "the Release rendered again after the kill", func() error {
		neverFailed()
		if n := l.renders(t, "failed"); n < 1 {
			return errors.New("the killed render not yet counted")
		}
		if busy := ws.Stats().Busy; busy != 1 {
			return fmt.Errorf("%d worker(s) busy", busy)
		}
		return nil
	})
	// The tenant mends the spec. The reconcile holding the bomb is killed
	// once more, and the next one renders the mended spec.
	for {
		var cur v1alpha1.Release
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(rel), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Spec.Files = shop("v1.4.0")
		err := s.client.Update(ctx, &cur)
		if err == nil {
			rel = &cur
			break
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	kill("the bomb again")
	eventually(t, "the mended Release rendered", func() error {
		neverFailed()
		var got v1alpha1.Release
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(rel), &got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReleaseRendered)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != rel.Generation {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	writes := log.settle(t, s, ns)
	neverFailed()
	total, failed := count(writes, v1alpha1.ReasonRenderFailed)
	t.Logf("KILLED kills_from_outside=2 worker_crashes=%d renders_failed=%d status_writes=%d render_failed_writes=%d",
		ws.Stats().Crashed, l.renders(t, "failed"), total, failed)
	if total != 1 {
		t.Fatalf("%d status write(s) to the Release; want one, Rendered=True", total)
	}
	noReleases(t, s)
}

// testStaleCopyIsRefused: the Release reconciler reads a Release from a
// copy several writes old, as a cache behind the API server gives it. Its
// status write carries that copy's resourceVersion: the API server refuses
// it with a conflict, and the reconciler computes the status again from
// the stored Release. The stored status ends consistent: Rendered, with
// the instance, the resources and the diagnostics of the render.
//
// The reconcilers run by hand here, with no manager running, so that no
// other reconcile writes the Release between the steps.
func testStaleCopyIsRefused(t *testing.T, s *suite) {
	const ns = "stale"
	ctx := context.Background()
	noReleases(t, s)
	if err := s.stopManager(); err != nil {
		t.Fatalf("stop the suite's manager: %v", err)
	}
	platformIs(t, s, acme())
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- pub.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	wc, err := client.NewWithWatch(s.cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The reconciler's client: its next Get of the Release, once armed,
	// returns the old copy; every status write's conflict is counted.
	stale := &staleClient{Client: wc}
	var mu sync.Mutex
	conflicts := 0
	rc := interceptor.NewClient(wc, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return stale.Get(ctx, key, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			err := c.SubResource(sub).Update(ctx, obj, opts...)
			if apierrors.IsConflict(err) {
				mu.Lock()
				conflicts++
				mu.Unlock()
			}
			return err
		},
	})
	rec := events.NewFakeRecorder(100)
	pr := &controller.PlatformReconciler{Client: s.client, Publisher: pub, Recorder: rec}
	rr := &controller.ReleaseReconciler{Client: rc, APIReader: s.client, Publisher: pub, Recorder: rec, Platforms: pr}
	reconcileBoth := func(what string) *v1alpha1.Release {
		t.Helper()
		if _, err := pr.Reconcile(ctx, ctrl.Request{NamespacedName: platformKey}); err != nil {
			t.Fatalf("%s: reconcile the Platform: %v", what, err)
		}
		key := client.ObjectKey{Namespace: ns, Name: "shop"}
		if _, err := rr.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%s: reconcile the Release: %v", what, err)
		}
		var rel v1alpha1.Release
		if err := s.client.Get(ctx, key, &rel); err != nil {
			t.Fatal(err)
		}
		return &rel
	}

	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	rel := newRelease(shop("v1.4.0"), 0)
	rel.Namespace = ns
	if err := s.client.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	old := reconcileBoth("rendered")
	wantCondition(t, old.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionTrue, v1alpha1.ReasonRendered)
	if len(old.Status.Diagnostics) != 0 {
		t.Fatalf("diagnostics %q before the skew", old.Status.Diagnostics)
	}

	// The Platform goes: the Release is written PlatformNotReady, with no
	// instance and no resources.
	if err := s.client.Delete(ctx, newPlatform(acme(), 0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Platform gone", func() error {
		var p v1alpha1.Platform
		if err := s.client.Get(ctx, platformKey, &p); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
	notReady := reconcileBoth("the Platform deleted")
	wantCondition(t, notReady.Status.Conditions, v1alpha1.ReleaseRendered, metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady)

	// The Platform comes back with an older web catalog: the render warns
	// of the skew, a status that differs from the old copy's. The
	// reconcile reads the copy from before the PlatformNotReady write.
	again := acme()
	again.Catalogs[0].Version = "v1.3.0"
	if err := s.client.Create(ctx, newPlatform(again, 0)); err != nil {
		t.Fatal(err)
	}
	stale.arm(old)
	stored := reconcileBoth("the Platform created again, the Release read from a stale copy")
	c := meta.FindStatusCondition(stored.Status.Conditions, v1alpha1.ReleaseRendered)
	mu.Lock()
	met := conflicts
	mu.Unlock()
	t.Logf("STALE conflicts=%d stored: Rendered=%v instance=%q resources=%d diagnostics=%d platform_generation=%d",
		met, c, stored.Status.Instance, len(stored.Status.Resources), len(stored.Status.Diagnostics), stored.Status.PlatformGeneration)
	if c == nil || c.Status != metav1.ConditionTrue || stored.Status.Instance != "shop" || len(stored.Status.Resources) != 2 ||
		len(stored.Status.Diagnostics) != 1 || !strings.Contains(stored.Status.Diagnostics[0], "v1.3.0") {
		t.Fatalf("stored status after a write from a stale copy: Rendered %+v, instance %q, %d resource(s), diagnostics %q; want Rendered True, shop, 2, the skew against v1.3.0",
			c, stored.Status.Instance, len(stored.Status.Resources), stored.Status.Diagnostics)
	}
	if met != 1 {
		t.Fatalf("status writes refused with a conflict: %d; want the one from the stale copy", met)
	}
	noReleases(t, s)
}

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
