package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"leasekit.dev/examples/controller/internal/metrics"
	"leasekit.dev/platform/isolate"
)

func TestWorkerMetricsReadTheStats(t *testing.T) {
	stats := isolate.Stats{Size: 4, Running: 3, Busy: 2, Restarts: 5, Crashed: 1, KilledTime: 7, KilledMemory: 2}
	reg := prometheus.NewRegistry()
	if err := metrics.New().RegisterWorkers(reg, func() isolate.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP leasekit_platform_worker_kills_total Builds and renders whose worker was killed past a budget, by budget: time, memory.
# TYPE leasekit_platform_worker_kills_total counter
leasekit_platform_worker_kills_total{budget="memory"} 2
leasekit_platform_worker_kills_total{budget="time"} 7
# HELP leasekit_platform_worker_restarts_total Worker processes started in place of one that ended: killed, crashed or recycled.
# TYPE leasekit_platform_worker_restarts_total counter
leasekit_platform_worker_restarts_total 5
# HELP leasekit_platform_worker_crashes_total Worker processes that ended before they answered, killed from outside or crashed.
# TYPE leasekit_platform_worker_crashes_total counter
leasekit_platform_worker_crashes_total 1
# HELP leasekit_platform_workers_busy Worker processes evaluating a build or render.
# TYPE leasekit_platform_workers_busy gauge
leasekit_platform_workers_busy 2
# HELP leasekit_platform_workers_running Worker processes running, idle or busy.
# TYPE leasekit_platform_workers_running gauge
leasekit_platform_workers_running 3
# HELP leasekit_platform_workers_size The most worker processes at once.
# TYPE leasekit_platform_workers_size gauge
leasekit_platform_workers_size 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	stats.KilledTime = 8
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(want, `{budget="time"} 7`, `{budget="time"} 8`, 1)),
		"leasekit_platform_worker_kills_total"); err != nil {
		t.Fatalf("a later scrape: %v", err)
	}
	if err := metrics.New().RegisterWorkers(prometheus.NewRegistry(), nil); err == nil {
		t.Fatal("RegisterWorkers with no stats function: no error")
	}
}
