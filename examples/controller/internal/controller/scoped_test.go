package controller_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

// The Scoped step's fleet: scopedReleases Releases over scopedCatalogs
// catalogs, each using one to three; the first catalog is used by every
// twentieth Release (5%), the one the step bumps.
const (
	scopedNamespace = "scoped"
	scopedReleases  = 1000
	scopedCatalogs  = 20
)

// scopedPath is the path of the step's catalog i.
func scopedPath(i int) string { return fmt.Sprintf("example.com/catalogs/c%02d@v1", i) }

// scopedSpec is the step's platform: its catalogs at version v1.0.0 but
// the first at bumped, and the web catalog for the write log's sentinels.
func scopedSpec(bumped, team string) v1alpha1.PlatformSpec {
	spec := acme()
	spec.Labels = map[string]v1alpha1.LabelValue{"team": v1alpha1.LabelValue(team)}
	for i := range scopedCatalogs {
		v := "v1.0.0"
		if i == 0 {
			v = bumped
		}
		spec.Catalogs = append(spec.Catalogs, v1alpha1.Catalog{Path: scopedPath(i), Version: v, Kinds: []string{"Deployment", "Service"}})
	}
	return spec
}

// scopedFleet returns the files of the step's Releases, by name, and the
// names of those that use the first catalog. Release i uses catalog 0
// when i%20 == 0, and one to three catalogs in all, drawn from a fixed
// seed.
func scopedFleet() (files map[string]map[string]string, affected []string) {
	rng := rand.New(rand.NewPCG(43, 1))
	files = make(map[string]map[string]string, scopedReleases)
	for i := range scopedReleases {
		name := fmt.Sprintf("r%04d", i)
		var uses []int
		if i%20 == 0 {
			uses = append(uses, 0)
			affected = append(affected, name)
		}
		for want := 1 + rng.IntN(3); len(uses) < want; {
			if c := 1 + rng.IntN(scopedCatalogs-1); !slices.Contains(uses, c) {
				uses = append(uses, c)
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "package fleet\n\nname: %q\n", name)
		for j, c := range uses {
			fmt.Fprintf(&b, "requires: %q: \"v1.0.0\"\n", scopedPath(c))
			fmt.Fprintf(&b, "components: c%d: {kind: \"Deployment\", catalog: %q, replicas: %d, spec: {image: \"app%d:%d\", port: %d}}\n",
				j, scopedPath(c), 1+j, i, j, 8080+j)
		}
		files[name] = map[string]string{
			"cue.mod/module.cue": "module: \"example.com/fleet@v0\"\nlanguage: version: \"v0.14.0\"\n",
			"fleet.cue":          b.String(),
		}
	}
	return files, affected
}

// evalCounter is an evaluator that counts its evaluations per instance
// digest: the test's own count, not the controller's word.
type evalCounter struct {
	platform.Evaluator
	mu    sync.Mutex
	evals map[string]int
}

func (e *evalCounter) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	e.mu.Lock()
	if e.evals == nil {
		e.evals = map[string]int{}
	}
	e.evals[in.Snapshot.Digest()]++
	e.mu.Unlock()
	return e.Evaluator.Render(ctx, in)
}

// take returns the evaluations counted so far, per Release name of
// digests, and starts counting from zero.
func (e *evalCounter) take(digests map[string]string) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for d, n := range e.evals {
		if name, ok := digests[d]; ok {
			out[name] = n
		}
	}
	e.evals = nil
	return out
}

func sum(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// testScoped: a Platform change costs what it touches. Over a fleet of
// scopedReleases Releases: a bump of a catalog 5% of them use evaluates
// and writes those, each once, and no other; a label change (what every
// render reads) evaluates and writes each once, and is the full re-render
// the bump's time is measured against (converge_ratio); a restarted
// manager trusts every signed status, evaluating and writing none; and a
// forged RenderFailed status on a Release that renders is evaluated and
// corrected at once. Evaluations are counted by the evaluator the test
// hands the manager, writes from a watch of the Releases.
func testScoped(t *testing.T, s *suite) {
	ctx := context.Background()
	noReleases(t, s)
	platformIs(t, s, acme())
	ev := &evalCounter{Evaluator: kernel.New()}
	l := startLeaderOn(t, s, ev)
	gen1 := setPlatformSpec(t, s, scopedSpec("v1.0.0", "platform"))
	eventually(t, "the scoped platform served", func() error {
		if g := l.wiring.Publisher.Store().Generation(); g != gen1 {
			return fmt.Errorf("serves generation %d, want %d", g, gen1)
		}
		return nil
	})

	fleet, affected := scopedFleet()
	digests := make(map[string]string, len(fleet))
	for name, files := range fleet {
		digests[kernel.Digest(instanceOf(files).Files)] = name
	}
	if err := s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scopedNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	createFleet(t, s, fleet)
	scopedRendered(t, s, fleet, nil, gen1)
	ev.take(digests)

	// A label change: every render reads the labels.
	rv := listVersion(t, s, scopedNamespace)
	log := watchWrites(t, s, scopedNamespace, rv)
	start := time.Now()
	gen2 := setPlatformSpec(t, s, scopedSpec("v1.0.0", "platform-2"))
	before := scopedRendered(t, s, fleet, nil, gen2)
	full := time.Since(start)
	writes := log.settleOn(t, s, scopedNamespace, "sentinel-labels")
	evals := ev.take(digests)
	for name := range fleet {
		if n := len(writes[name]); n != 1 || evals[name] != 1 {
			t.Errorf("label change: %s evaluated %d time(s), written %d; want once each", name, evals[name], n)
		}
	}

	// A bump of the catalog 5% of the fleet uses.
	rv = listVersion(t, s, scopedNamespace)
	log = watchWrites(t, s, scopedNamespace, rv)
	start = time.Now()
	gen3 := setPlatformSpec(t, s, scopedSpec("v1.1.0", "platform-2"))
	after := scopedRendered(t, s, fleet, affected, gen3)
	converge := time.Since(start)
	writes = log.settleOn(t, s, scopedNamespace, "sentinel-bump")
	evals = ev.take(digests)
	bumpWrites := 0
	for name := range fleet {
		want := 0
		if slices.Contains(affected, name) {
			want = 1
		}
		bumpWrites += len(writes[name])
		if n := len(writes[name]); n != want || evals[name] != want {
			t.Errorf("bump: %s evaluated %d time(s), written %d; want %d each", name, evals[name], n, want)
		}
	}
	// Every status is the one of the generation served: what a render
	// reads now is what the status says it read, and an unaffected
	// Release's status is the one written for gen2.
	rec, release, ok := l.wiring.Publisher.Store().Lease()
	if !ok || rec.Generation != gen3 {
		t.Fatalf("the leader serves generation %d (%v), want %d", rec.Generation, ok, gen3)
	}
	for name, rel := range after {
		key, err := l.wiring.Publisher.Key(ctx, rec, instanceOf(fleet[name]))
		switch {
		case err != nil:
			t.Errorf("%s: key: %v", name, err)
		case rel.Status.DependenciesDigest != key.Dependencies:
			t.Errorf("%s: status.dependenciesDigest %s, want %s, what a render against generation %d reads", name, rel.Status.DependenciesDigest, key.Dependencies, gen3)
		case !strings.HasPrefix(rel.Status.MAC, "hmac-sha256:"):
			t.Errorf("%s: status.mac %q", name, rel.Status.MAC)
		case !slices.Contains(affected, name) && !equalVerdicts(&before[name].Status, &rel.Status):
			t.Errorf("%s: unaffected, its status changed: %+v, was %+v", name, rel.Status, before[name].Status)
		}
	}
	release()
	ratio := converge.Seconds() / full.Seconds()

	// The manager restarted: a new process state, the same cluster.
	if err := l.stop(); err != nil {
		t.Fatalf("stop the manager: %v", err)
	}
	ev2 := &evalCounter{Evaluator: kernel.New()}
	rv = listVersion(t, s, scopedNamespace)
	log = watchWrites(t, s, scopedNamespace, rv)
	l2 := startLeaderOn(t, s, ev2)
	var all v1alpha1.ReleaseList
	if err := s.client.List(ctx, &all, client.InNamespace(scopedNamespace)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted manager holds a verdict for every Release", func() error {
		if n := l2.wiring.Release.Verdicts(); n < len(all.Items) {
			return fmt.Errorf("%d of %d", n, len(all.Items))
		}
		return nil
	})
	writes = log.settleOn(t, s, scopedNamespace, "sentinel-restart")
	restartEvals := sum(ev2.take(digests))
	restartWrites := 0
	for name := range fleet {
		restartWrites += len(writes[name])
	}
	if restartEvals != 0 || restartWrites != 0 {
		t.Errorf("the restarted manager evaluated %d Release(s) and wrote %d; want none", restartEvals, restartWrites)
	}

	// A forged RenderFailed on a Release that renders, keeping its MAC.
	var rel v1alpha1.Release
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: scopedNamespace, Name: "r0001"}, &rel); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&rel.Status.Conditions, metav1.Condition{Type: v1alpha1.ReleaseRendered, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonRenderFailed, Message: "forged", ObservedGeneration: rel.Generation})
	if err := s.client.Status().Update(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the forged status corrected", func() error {
		var got v1alpha1.Release
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(&rel), &got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReleaseRendered); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Rendered %+v", c)
		}
		return nil
	})
	if n := ev2.take(digests)["r0001"]; n != 1 {
		t.Errorf("the forged Release was evaluated %d time(s), want 1", n)
	}

	t.Logf("SCOPED releases=%d affected=%d evaluations=%d writes=%d converge_ratio=%.3f restart_evaluations=%d",
		len(fleet), len(affected), sum(evals), bumpWrites, ratio, restartEvals)
	t.Logf("scoped: full re-render %v, bump converged in %v, restart wrote %d", full.Round(time.Millisecond), converge.Round(time.Millisecond), restartWrites)
	if ratio > 0.2 {
		t.Errorf("converge_ratio %.3f: the bump took %v, the full re-render %v; want at most 0.2", ratio, converge, full)
	}
	noReleases(t, s)
	setPlatformSpec(t, s, acme())
}

// equalVerdicts reports whether a and b are the same verdict, conditions'
// transition times aside.
func equalVerdicts(a, b *v1alpha1.ReleaseStatus) bool {
	ca := meta.FindStatusCondition(a.Conditions, v1alpha1.ReleaseRendered)
	cb := meta.FindStatusCondition(b.Conditions, v1alpha1.ReleaseRendered)
	return ca != nil && cb != nil && *ca == *cb && a.MAC == b.MAC && a.PlatformGeneration == b.PlatformGeneration &&
		a.DependenciesDigest == b.DependenciesDigest && a.InputsDigest == b.InputsDigest && a.ResourcesDigest == b.ResourcesDigest
}

// createFleet creates the Releases of fleet in scopedNamespace, 16 at a
// time.
func createFleet(t *testing.T, s *suite, fleet map[string]map[string]string) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	turns := make(chan struct{}, 16)
	for name, files := range fleet {
		wg.Go(func() {
			turns <- struct{}{}
			defer func() { <-turns }()
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: scopedNamespace, Name: name}, Spec: v1alpha1.ReleaseSpec{Files: files}}
			if err := s.client.Create(context.Background(), rel); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("create the fleet: %v", err)
	}
}

// scopedRendered waits until every Release of fleet is Rendered for its
// spec, those in of (every one when of is nil) against platform
// generation gen, and returns them by name.
func scopedRendered(t *testing.T, s *suite, fleet map[string]map[string]string, of []string, gen int64) map[string]*v1alpha1.Release {
	t.Helper()
	out := map[string]*v1alpha1.Release{}
	waitLong(t, fmt.Sprintf("the fleet rendered against generation %d", gen), func() error {
		var list v1alpha1.ReleaseList
		if err := s.client.List(context.Background(), &list, client.InNamespace(scopedNamespace)); err != nil {
			return err
		}
		clear(out)
		done := 0
		for i := range list.Items {
			rel := &list.Items[i]
			if _, ok := fleet[rel.Name]; !ok {
				continue
			}
			out[rel.Name] = rel
			c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != rel.Generation {
				continue
			}
			if (of == nil || slices.Contains(of, rel.Name)) && rel.Status.PlatformGeneration != gen {
				continue
			}
			done++
		}
		if done != len(fleet) {
			return fmt.Errorf("%d of %d", done, len(fleet))
		}
		return nil
	})
	return out
}
