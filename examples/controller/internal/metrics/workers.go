package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"leasekit.dev/platform/isolate"
)

// RegisterWorkers registers, with reg, the metrics of the kernel's worker
// processes, read from stats (an isolate.Workers' Stats method) at each
// scrape: builds and renders killed by budget, workers restarted and
// crashed, and the pool's size, running and busy workers.
func (m *Metrics) RegisterWorkers(reg prometheus.Registerer, stats func() isolate.Stats) error {
	if stats == nil {
		return errors.New("metrics: RegisterWorkers needs a stats function")
	}
	return reg.Register(newWorkersCollector(stats))
}

// workersCollector reads an isolate.Workers' Stats at each scrape.
type workersCollector struct {
	read                      func() isolate.Stats
	killed, restarts, crashed *prometheus.Desc
	size, running, busy       *prometheus.Desc
}

func newWorkersCollector(read func() isolate.Stats) *workersCollector {
	return &workersCollector{
		read: read,
		killed: prometheus.NewDesc(Namespace+"_worker_kills_total",
			"Builds and renders whose worker was killed past a budget, by budget: time, memory.", []string{"budget"}, nil),
		restarts: prometheus.NewDesc(Namespace+"_worker_restarts_total",
			"Worker processes started in place of one that ended: killed, crashed or recycled.", nil, nil),
		crashed: prometheus.NewDesc(Namespace+"_worker_crashes_total",
			"Worker processes that ended before they answered, killed from outside or crashed.", nil, nil),
		size: prometheus.NewDesc(Namespace+"_workers_size",
			"The most worker processes at once.", nil, nil),
		running: prometheus.NewDesc(Namespace+"_workers_running",
			"Worker processes running, idle or busy.", nil, nil),
		busy: prometheus.NewDesc(Namespace+"_workers_busy",
			"Worker processes evaluating a build or render.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *workersCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.killed, c.restarts, c.crashed, c.size, c.running, c.busy} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *workersCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	ch <- prometheus.MustNewConstMetric(c.killed, prometheus.CounterValue, float64(s.KilledTime), "time")
	ch <- prometheus.MustNewConstMetric(c.killed, prometheus.CounterValue, float64(s.KilledMemory), "memory")
	ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(s.Restarts))
	ch <- prometheus.MustNewConstMetric(c.crashed, prometheus.CounterValue, float64(s.Crashed))
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(s.Size))
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(s.Running))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(s.Busy))
}
