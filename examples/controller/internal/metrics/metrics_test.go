package metrics_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"leasekit.dev/dirlife"
	"leasekit.dev/examples/controller/internal/metrics"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// publisher returns a booted Publisher reporting to m, registered on a new
// registry.
func publisher(t *testing.T) (*platform.Publisher, *metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	m := metrics.New()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{
		NoSync: true, OnPublish: m.ObservePublish, OnReclaim: m.ObserveReclaim,
	})
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, pub.Stats); err != nil {
		t.Fatal(err)
	}
	return pub, m, reg
}

func module(t *testing.T, version string) platformmodule.Files {
	t.Helper()
	files, err := platformmodule.Generate(platformmodule.Input{Name: "acme", Catalogs: []platformmodule.Catalog{
		{Path: "example.com/catalogs/web@v1", Version: version, Kinds: []string{"Deployment"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestMetricsFollowThePublisher(t *testing.T) {
	pub, m, reg := publisher(t)
	ctx := context.Background()
	if _, err := pub.Publish(ctx, 1, module(t, "v1.0.0"), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Publish(ctx, 1, module(t, "v1.0.0"), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	_, release, ok := pub.Store().Lease()
	if !ok {
		t.Fatal("no lease")
	}
	_, release2, _ := pub.Store().Lease()
	if _, err := pub.Publish(ctx, 2, module(t, "v1.1.0"), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	broken := module(t, "v1.2.0")
	broken["overlay.cue"] = []byte("package platform\nname: \"other\"\n")
	if _, err := pub.Publish(ctx, 3, broken, kernel.SkewWarn); err == nil {
		t.Fatal("a conflicting module built")
	}
	if _, err := pub.Publish(ctx, 1, module(t, "v1.0.0"), kernel.SkewWarn); err == nil {
		t.Fatal("a stale generation was published")
	}

	want := `
# HELP leasekit_platform_generation The generation the store holds; 0 when none.
# TYPE leasekit_platform_generation gauge
leasekit_platform_generation 2
# HELP leasekit_platform_generations_on_disk Generation directories on disk.
# TYPE leasekit_platform_generations_on_disk gauge
leasekit_platform_generations_on_disk 2
# HELP leasekit_platform_leases Outstanding leases, by generation.
# TYPE leasekit_platform_leases gauge
leasekit_platform_leases{generation="1"} 2
# HELP leasekit_platform_publishes_total Publish calls, by outcome.
# TYPE leasekit_platform_publishes_total counter
leasekit_platform_publishes_total{outcome="build-failed"} 1
leasekit_platform_publishes_total{outcome="published"} 2
leasekit_platform_publishes_total{outcome="stale"} 1
leasekit_platform_publishes_total{outcome="unchanged"} 1
`
	names := []string{"leasekit_platform_generation", "leasekit_platform_generations_on_disk", "leasekit_platform_leases", "leasekit_platform_publishes_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	// The reclaim loop removes generation 1 once both leases are released.
	prunesBefore := gatherCounter(t, reg, "leasekit_platform_prunes_total")
	release()
	release2()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pub.Run(runCtx) }()
	waitFor(t, func() bool { return histCount(t, m.ReclaimDelay) >= 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := gatherCounter(t, reg, "leasekit_platform_prunes_total"); got <= prunesBefore {
		t.Fatalf("prunes_total %v after a reclaim, want more than %v", got, prunesBefore)
	}
	if n := testutil.CollectAndCount(reg, "leasekit_platform_leases"); n != 0 {
		t.Fatalf("%d lease series after every release, want none", n)
	}
	if n := testutil.CollectAndCount(m.PublishPhase); n != 4 {
		t.Fatalf("%d publish phase series, want write, build, set and prune", n)
	}
}

func TestObserveRenderResults(t *testing.T) {
	m := metrics.New()
	m.ObserveRender(0.01, nil)
	m.ObserveRender(0.02, platform.ErrNotReady)
	m.ObserveRender(0.03, errors.New("render: 1 problem"))
	for _, result := range []string{"ok", "not-ready", "failed"} {
		if n := histCount(t, m.Renders.WithLabelValues(result).(prometheus.Histogram)); n != 1 {
			t.Errorf("render_seconds{result=%q} count %d, want 1", result, n)
		}
	}
}

func TestRegisterRefusesADuplicateAndLeavesTheRegistry(t *testing.T) {
	pub, _, reg := publisher(t)
	before, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	err = metrics.New().Register(reg, pub.Stats)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second Register: %v, want AlreadyRegisteredError", err)
	}
	after, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("a refused Register changed the registry: %d families, was %d", len(after), len(before))
	}

	// Into a fresh registry where only one name is taken: nothing stays
	// registered after the refusal.
	fresh := prometheus.NewRegistry()
	fresh.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "leasekit_platform_reclaim_errors_total", Help: "taken"}))
	m := metrics.New()
	if err := m.Register(fresh, pub.Stats); err == nil {
		t.Fatal("Register over a taken name succeeded")
	}
	if fresh.Unregister(m.Publishes) || fresh.Unregister(m.PublishPhase) || fresh.Unregister(m.ReclaimDelay) {
		t.Fatal("a refused Register left collectors registered")
	}
	if err := metrics.New().Register(prometheus.NewRegistry(), nil); err == nil {
		t.Fatal("Register with no stats function succeeded")
	}
}

func histCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var out dto.Metric
	if err := h.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.Histogram.GetSampleCount()
}

func gatherCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.Metric) == 1 {
			return f.Metric[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}

// waitFor polls cond until it holds: a wait for the reclaim loop, which
// no bound of its own decides. Only a loop that never gets there fails
// it, shortly before the test binary's -timeout would end the run without
// saying what it waited for.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline, bounded := t.Deadline()
	deadline = deadline.Add(-15 * time.Second)
	for !cond() {
		if bounded && time.Now().After(deadline) {
			t.Fatal("condition still false as the test's -timeout nears")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStalledRemovalsGauge: the gauge of removals running past the
// deadline follows the Publisher's Stats, and falls back to 0 once they
// are over; a stalled removal's report counts as a reclaim error.
func TestStalledRemovalsGauge(t *testing.T) {
	m := metrics.New()
	reg := prometheus.NewRegistry()
	stats := platform.Stats{Stats: publish.Stats[int64]{StalledRemovals: 2}}
	if err := m.Register(reg, func() platform.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	gauge := func() float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "leasekit_platform_removals_stalled" && len(f.Metric) == 1 {
				return f.Metric[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no gauge leasekit_platform_removals_stalled")
		return 0
	}
	if got := gauge(); got != 2 {
		t.Fatalf("removals_stalled = %v, want 2", got)
	}
	m.ObserveReclaim(platform.ReclaimEvent{Identity: publish.Identity[int64]{Key: 4}, Err: &dirlife.StalledError{Root: "/r", Deadline: time.Second, Entries: []dirlife.StalledEntry{{Name: "gen-4", Aside: ".aside-8000000000000001"}}}})
	if got := testutil.ToFloat64(m.ReclaimErrors); got != 1 {
		t.Fatalf("reclaim_errors_total = %v after a stall, want 1", got)
	}
	stats.StalledRemovals = 0
	if got := gauge(); got != 0 {
		t.Fatalf("removals_stalled = %v once the removals are over, want 0", got)
	}
}

func TestMemoMetricsFollowRenders(t *testing.T) {
	pub, _, reg := publisher(t)
	ctx := context.Background()
	if _, err := pub.Publish(ctx, 1, module(t, "v1.0.0"), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	inst := kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue": []byte("package shop\n\nname: \"shop\"\nrequires: \"example.com/catalogs/web@v1\": \"v1.0.0\"\n" +
			"components: web: {kind: \"Deployment\", catalog: \"example.com/catalogs/web@v1\"}\n"),
	}}
	for range 3 {
		if _, _, err := pub.Render(ctx, inst); err != nil {
			t.Fatal(err)
		}
	}
	if got := gatherCounter(t, reg, "leasekit_platform_render_memo_hits_total"); got != 2 {
		t.Errorf("render_memo_hits_total %v, want 2", got)
	}
	if got := gatherCounter(t, reg, "leasekit_platform_render_memo_misses_total"); got != 1 {
		t.Errorf("render_memo_misses_total %v, want 1", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "leasekit_platform_render_memo_bytes" {
			if got := f.Metric[0].GetGauge().GetValue(); got <= 0 {
				t.Errorf("render_memo_bytes %v, want some", got)
			}
		}
	}
	for _, name := range []string{"leasekit_platform_render_memo_evictions_total", "leasekit_platform_render_memo_entries", "leasekit_platform_render_admission_waits_total", "leasekit_platform_render_admission_waiting"} {
		if n := testutil.CollectAndCount(reg, name); n != 1 {
			t.Errorf("%d series of %s, want 1", n, name)
		}
	}
}
