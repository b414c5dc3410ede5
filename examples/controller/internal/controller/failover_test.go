package controller_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform/isolate"
)

var failoverReleases = flag.Int("failover.releases", 200, "Releases the Failover subtests render, 10 components each")

// failoverTimeout is the workers' time budget in the Failover subtests,
// raised past the suite's: longer than any -timeout the suite runs with,
// so that no render of theirs is killed for time however slow the
// machine (a render of 10 components in a race-detected worker on a
// loaded machine takes far longer than a fast one). A render that hangs
// is the test binary's -timeout's to report.
const failoverTimeout = time.Hour

// failoverNamespace holds the Failover subtests' Releases.
const failoverNamespace = "fleet"

// testFailover measures a leader change, warm and cold, on two managers
// sharing one API server, with *failoverReleases Releases rendered in
// worker processes. Timings are logged, not asserted: the suite runs
// under -race on loaded machines. Asserted: a warm standby begins no
// evaluation once elected, and writes no Release PlatformNotReady.
func testFailover(t *testing.T) {
	t.Run("steady", func(t *testing.T) {
		warm := runFailover(t, "steady", true)
		cold := runFailover(t, "steady", false)
		t.Logf("FAILOVER scenario=steady releases=%d warm_first_ms=%d warm_all_ms=%d warm_evals=%d cold_first_ms=%d cold_all_ms=%d cold_evals=%d",
			*failoverReleases, warm.first.Milliseconds(), warm.all.Milliseconds(), warm.evals,
			cold.first.Milliseconds(), cold.all.Milliseconds(), cold.evals)
		if warm.evals != 0 {
			t.Errorf("the warm standby began %d evaluations after its election, want 0", warm.evals)
		}
		if warm.notReady != 0 {
			t.Errorf("the warm standby wrote %d Releases PlatformNotReady, want 0", warm.notReady)
		}
	})
	t.Run("racing", func(t *testing.T) {
		warm := runFailover(t, "racing", true)
		cold := runFailover(t, "racing", false)
		t.Logf("FAILOVER scenario=racing releases=%d warm_all_ms=%d cold_all_ms=%d not_ready=%d",
			*failoverReleases, warm.all.Milliseconds(), cold.all.Milliseconds(), warm.notReady)
		if warm.notReady != 0 {
			t.Errorf("the warm standby wrote %d Releases PlatformNotReady, want 0", warm.notReady)
		}
		// A cold standby elected before it has published writes every
		// Release it reconciles first PlatformNotReady: logged, for it is
		// the Release reconciler's behaviour, not the standby's.
		t.Logf("cold standby: %d Releases written PlatformNotReady", cold.notReady)
	})
}

// failover is what one run measures, from the second manager's election.
type failover struct {
	first, all time.Duration // the first and the last Release rendered against the new platform
	evals      uint64        // evaluations begun
	notReady   int           // Releases written PlatformNotReady
}

// runFailover runs one scenario on an API server of its own: leader A
// renders every Release, the Platform changes, and A stops: in "steady"
// once B has caught up (warm: followed the change and rendered every
// Release; cold: once A has published it), in "racing" at the instant
// of the change.
func runFailover(t *testing.T, scenario string, warm bool) failover {
	t.Helper()
	ctx := context.Background()
	n := *failoverReleases
	// Everything stops when the run returns, so that the next run has the
	// machine to itself.
	sc := startScenario(t, failoverNamespace, nil)
	defer sc.stop()
	c := sc.client
	sc.createReleases(t, n)

	dir := t.TempDir()
	mgrA, _, err := newManagerWith(sc.cfg, filepath.Join(dir, "a"), prometheus.NewRegistry(), &isolate.Workers{Timeout: failoverTimeout, Memory: 8 << 30}, warm)
	if err != nil {
		t.Fatal(err)
	}
	stopA := startManager(mgrA)
	defer func() { _ = stopA() }()
	waitElected(t, mgrA.Elected(), "A")

	mgrB, wB, err := newManagerWith(sc.cfg, filepath.Join(dir, "b"), prometheus.NewRegistry(), &isolate.Workers{Timeout: failoverTimeout, Memory: 8 << 30}, warm)
	if err != nil {
		t.Fatal(err)
	}
	// B's renders once elected: the time each that succeeded began and
	// ended. B's Release reconciler runs only once B is elected (a warm
	// standby's renders are not observed), so every render observed is
	// one of B's as leader.
	var mu sync.Mutex
	var electedAt, firstBegun time.Time
	var renders []time.Time
	observe := wB.Release.Observe
	wB.Release.Observe = func(secs float64, err error) {
		observe(secs, err)
		if err == nil {
			now := time.Now()
			mu.Lock()
			if begun := now.Add(-time.Duration(secs * float64(time.Second))); firstBegun.IsZero() || begun.Before(firstBegun) {
				firstBegun = begun
			}
			renders = append(renders, now)
			mu.Unlock()
		}
	}
	// The election's time, as near as it is seen: this goroutine wakes
	// once B is elected, and a render of B's may begin before it runs.
	// The election came before both.
	elected := make(chan struct{})
	go func() {
		<-mgrB.Elected()
		now := time.Now()
		mu.Lock()
		electedAt = now
		mu.Unlock()
		close(elected)
	}()
	stopB := startManager(mgrB)
	defer func() {
		if err := stopB(); err != nil {
			t.Errorf("stop B: %v", err)
		}
	}()
	if !mgrB.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("B's cache did not sync")
	}

	failoverRendered(t, sc, n, 1)
	if warm {
		standbyCaughtUp(t, wB, n)
	}
	// Releases written PlatformNotReady from here on.
	w, err := c.Watch(ctx, &v1alpha1.ReleaseList{}, client.InNamespace(failoverNamespace))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var wmu sync.Mutex
	notReady := make(map[string]bool)
	onNew := make(map[string]bool) // Rendered against generation 2, as last seen
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			rel, ok := ev.Object.(*v1alpha1.Release)
			if !ok || ev.Type == watch.Error {
				continue
			}
			c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
			wmu.Lock()
			if c != nil && c.Reason == v1alpha1.ReasonPlatformNotReady {
				notReady[rel.Name] = true
			}
			if c != nil && c.Status == metav1.ConditionTrue && rel.Status.PlatformGeneration == 2 {
				onNew[rel.Name] = true
			} else {
				delete(onNew, rel.Name)
			}
			wmu.Unlock()
		}
	}()

	spec := acme()
	spec.Labels["tier"] = "gold"
	var evalsAt uint64 // B's evaluations begun before it was elected
	switch scenario {
	case "steady":
		gen := updateSpecWith(t, c, spec)
		platformReady(t, c, gen)
		if warm {
			standbyCaughtUp(t, wB, n)
		}
		// B has nothing more to evaluate until it is elected: warm, it has
		// caught up; cold, it evaluates nothing.
		m := wB.Publisher.Stats().Memo
		evalsAt = m.Misses - m.Shared
		if err := stopA(); err != nil {
			t.Fatalf("stop A: %v", err)
		}
	case "racing":
		stopped := make(chan error, 1)
		go func() { stopped <- stopA() }()
		updateSpecWith(t, c, spec)
		if err := <-stopped; err != nil {
			t.Fatalf("stop A: %v", err)
		}
	}
	waitElected(t, mgrB.Elected(), "B")
	<-elected
	// Every Release rendered against the new platform, as the watch sees
	// it: a List of every Release each 50ms, as failoverRendered makes,
	// would load the API server the new leader writes to, and slow what
	// is measured.
	waitLong(t, fmt.Sprintf("%d Releases rendered against generation 2", n), func() error {
		select {
		case <-watched: // the watch ended early: list
			return sc.rendered(n, 2)
		default:
		}
		wmu.Lock()
		defer wmu.Unlock()
		if len(onNew) != n {
			return fmt.Errorf("%d of %d", len(onNew), n)
		}
		return nil
	})
	allAt := time.Now()
	// B holds a verdict for every Release: rendered by B, or one A wrote
	// for the new platform and signed, which B trusts without a render.
	waitLong(t, fmt.Sprintf("B holds the verdicts of all %d Releases against the new platform", n), func() error {
		if v := wB.Release.Verdicts(); v < n {
			return fmt.Errorf("%d held", v)
		}
		return nil
	})
	heldAt := time.Now()
	w.Stop()
	<-watched
	wmu.Lock()
	defer wmu.Unlock()

	m := wB.Publisher.Stats().Memo
	mu.Lock()
	defer mu.Unlock()
	if firstBegun.Before(electedAt) {
		electedAt = firstBegun
	}
	// The first and the last verdict B made its own: a render, or, for
	// what A wrote and signed, the moment B was seen holding them all.
	first, last := heldAt, heldAt
	if len(renders) > 0 {
		first = renders[0]
		if len(renders) >= n {
			last = renders[len(renders)-1]
		}
	}
	f := failover{
		first:    first.Sub(electedAt),
		all:      last.Sub(electedAt),
		evals:    m.Misses - m.Shared - evalsAt,
		notReady: len(notReady),
	}
	if scenario == "racing" {
		// B may render against the platform it served when elected, then
		// against the new one: all is when the status of every Release
		// names the new one.
		f.all = allAt.Sub(electedAt)
	}
	return f
}

// tenComponents is an instance module named r<i> with ten components of
// the web catalog.
func tenComponents(i int) map[string]string {
	var b strings.Builder
	fmt.Fprintf(&b, "package fleet\n\nname: \"r%03d\"\nrequires: %q: \"v1.4.0\"\n", i, webPath)
	for j := range 10 {
		kind, port := "Deployment", 8080+j
		if j%2 == 1 {
			kind = "Service"
		}
		fmt.Fprintf(&b, "components: c%d: {kind: %q, catalog: %q, replicas: %d, spec: {image: \"app%d:%d\", port: %d}}\n",
			j, kind, webPath, j%3, i, j, port)
	}
	return map[string]string{
		"cue.mod/module.cue": "module: \"example.com/fleet@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"fleet.cue":          b.String(),
	}
}

func waitElected(t *testing.T, elected <-chan struct{}, who string) {
	t.Helper()
	eventually(t, who+" elected", func() error {
		select {
		case <-elected:
			return nil
		default:
			return errors.New("not elected")
		}
	})
}

// failoverRendered waits until n Releases are Rendered against gen.
func failoverRendered(t *testing.T, sc *scenario, n int, gen int64) {
	t.Helper()
	waitLong(t, fmt.Sprintf("%d Releases rendered against generation %d", n, gen), func() error {
		return sc.rendered(n, gen)
	})
}

// standbyCaughtUp waits until the warm standby w has followed the Platform
// and rendered n Releases against it.
func standbyCaughtUp(t *testing.T, w *controller.Wiring, n int) {
	t.Helper()
	waitLong(t, "the standby caught up", func() error {
		if err := w.Standby.CaughtUp(context.Background()); err != nil {
			return err
		}
		if cur, _ := w.Standby.Rendered(); cur != n {
			return fmt.Errorf("%d of %d Releases rendered", cur, n)
		}
		return nil
	})
}

// updateSpecWith replaces the Platform's spec, with a merge patch that
// a concurrent status write does not conflict with, and returns its
// generation.
func updateSpecWith(t *testing.T, c client.Client, spec v1alpha1.PlatformSpec) int64 {
	t.Helper()
	var p v1alpha1.Platform
	if err := c.Get(context.Background(), platformKey, &p); err != nil {
		t.Fatal(err)
	}
	base := p.DeepCopy()
	p.Spec = spec
	if err := c.Patch(context.Background(), &p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	return p.Generation
}

// waitLong calls check until it returns nil, logging its last error each
// minute: a wait for many renders, which on a loaded machine under -race
// may take minutes. The test binary's -timeout bounds it.
func waitLong(t *testing.T, what string, check func() error) {
	t.Helper()
	next := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(next) {
			t.Logf("%s: still waiting: %v", what, err)
			next = time.Now().Add(time.Minute)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
