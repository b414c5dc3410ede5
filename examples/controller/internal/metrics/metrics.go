package metrics

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
)

// Namespace prefixes every metric name.
const Namespace = "leasekit_platform"

// Metrics are the Publisher's metrics. Create them with [New].
type Metrics struct {
	// Publishes counts Publish calls by outcome ("published",
	// "unchanged", "changed", "build-failed", "stale", "failed"; the
	// words of [leasekit.dev/publish.Outcome.String]).
	Publishes *prometheus.CounterVec
	// PublishPhase observes the seconds each phase of a publish took, by
	// phase: "write", "build", "set", "prune". A phase a publish did not
	// reach is not observed.
	PublishPhase *prometheus.HistogramVec
	// ReclaimDelay observes the seconds from the instant a generation
	// became reclaimable (superseded or forgotten, and its last lease
	// released) to its directory's removal.
	ReclaimDelay prometheus.Histogram
	// ReclaimErrors counts failed directory removals, and reports of one
	// still running past the removal deadline (each is retried).
	ReclaimErrors prometheus.Counter
	// Renders observes the seconds each render took, by result: "ok",
	// "failed", "over-budget" (killed past a kernel budget) or
	// "not-ready".
	Renders *prometheus.HistogramVec

	stats *statsCollector
}

// New returns the metrics, not yet registered.
func New() *Metrics {
	return &Metrics{
		Publishes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "publishes_total",
			Help: "Publish calls, by outcome.",
		}, []string{"outcome"}),
		PublishPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "publish_phase_seconds",
			Help:    "Seconds each phase of a publish took: write, build, set, prune.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"phase"}),
		ReclaimDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "reclaim_delay_seconds",
			Help:    "Seconds from a generation becoming reclaimable to the removal of its directory.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 12),
		}),
		ReclaimErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Name: "reclaim_errors_total",
			Help: "Failed removals of generation directories, and reports of one still running past the removal deadline; each is retried.",
		}),
		Renders: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "render_seconds",
			Help:    "Seconds each render took, its wait for an evaluation's turn included, by result: ok, failed, over-budget, not-ready.",
			Buckets: prometheus.ExponentialBuckets(0.001, 3, 10),
		}, []string{"result"}),
		stats: newStatsCollector(),
	}
}

// Register registers every metric with reg; stats is read at each scrape
// for the gauges and the prune counter (a Publisher's Stats method). On
// failure it unregisters what it registered and returns the error.
func (m *Metrics) Register(reg prometheus.Registerer, stats func() platform.Stats) error {
	if stats == nil {
		return errors.New("metrics: Register needs a stats function")
	}
	m.stats.read = stats
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.Publishes, m.PublishPhase, m.ReclaimDelay, m.ReclaimErrors, m.Renders, m.stats} {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return err
		}
		done = append(done, c)
	}
	return nil
}

// ObservePublish records a publish: its outcome and the time of each
// phase it reached. It is the Publisher's OnPublish hook.
func (m *Metrics) ObservePublish(e platform.PublishEvent) {
	m.Publishes.WithLabelValues(e.Outcome.String()).Inc()
	for _, p := range []struct {
		phase string
		secs  float64
	}{
		{"write", e.Timings.Write.Seconds()},
		{"build", e.Timings.Build.Seconds()},
		{"set", e.Timings.Set.Seconds()},
		{"prune", e.Timings.Prune.Seconds()},
	} {
		if p.secs > 0 {
			m.PublishPhase.WithLabelValues(p.phase).Observe(p.secs)
		}
	}
}

// ObserveReclaim records a removal attempt: its delay when it succeeded,
// an error otherwise. It is the Publisher's OnReclaim hook.
func (m *Metrics) ObserveReclaim(e platform.ReclaimEvent) {
	if e.Err != nil {
		m.ReclaimErrors.Inc()
		return
	}
	m.ReclaimDelay.Observe(e.Delay.Seconds())
}

// ObserveRender records a render that took secs and ended with err.
func (m *Metrics) ObserveRender(secs float64, err error) {
	result := "ok"
	switch {
	case errors.Is(err, platform.ErrNotReady):
		result = "not-ready"
	case errors.Is(err, isolate.ErrBudget):
		result = "over-budget"
	case err != nil:
		result = "failed"
	}
	m.Renders.WithLabelValues(result).Observe(secs)
}

// statsCollector reads a Publisher's Stats at each scrape.
type statsCollector struct {
	read       func() platform.Stats
	generation *prometheus.Desc
	onDisk     *prometheus.Desc
	leases     *prometheus.Desc
	prunes     *prometheus.Desc
	stalled    *prometheus.Desc
	memo       memoDescs
}

// memoDescs describe the render memo and the admission of renders.
type memoDescs struct {
	hits, misses, evictions, bytes, entries, waits, waiting *prometheus.Desc
}

func newMemoDescs() memoDescs {
	return memoDescs{
		hits: prometheus.NewDesc(Namespace+"_render_memo_hits_total",
			"Renders answered from the render memo.", nil, nil),
		misses: prometheus.NewDesc(Namespace+"_render_memo_misses_total",
			"Renders that evaluated, or waited for an identical evaluation.", nil, nil),
		evictions: prometheus.NewDesc(Namespace+"_render_memo_evictions_total",
			"Render memo entries evicted to fit its byte budget.", nil, nil),
		bytes: prometheus.NewDesc(Namespace+"_render_memo_bytes",
			"Bytes the render memo accounts for: output JSON length plus key length.", nil, nil),
		entries: prometheus.NewDesc(Namespace+"_render_memo_entries",
			"Entries the render memo holds.", nil, nil),
		waits: prometheus.NewDesc(Namespace+"_render_admission_waits_total",
			"Renders that waited for admission.", nil, nil),
		waiting: prometheus.NewDesc(Namespace+"_render_admission_waiting",
			"Renders waiting for admission now.", nil, nil),
	}
}

func (d memoDescs) describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{d.hits, d.misses, d.evictions, d.bytes, d.entries, d.waits, d.waiting} {
		ch <- desc
	}
}

func (d memoDescs) collect(ch chan<- prometheus.Metric, s platform.Stats) {
	ch <- prometheus.MustNewConstMetric(d.hits, prometheus.CounterValue, float64(s.Memo.Hits))
	ch <- prometheus.MustNewConstMetric(d.misses, prometheus.CounterValue, float64(s.Memo.Misses))
	ch <- prometheus.MustNewConstMetric(d.evictions, prometheus.CounterValue, float64(s.Memo.Evictions))
	ch <- prometheus.MustNewConstMetric(d.bytes, prometheus.GaugeValue, float64(s.Memo.Bytes))
	ch <- prometheus.MustNewConstMetric(d.entries, prometheus.GaugeValue, float64(s.Memo.Entries))
	ch <- prometheus.MustNewConstMetric(d.waits, prometheus.CounterValue, float64(s.Admission.Waits))
	ch <- prometheus.MustNewConstMetric(d.waiting, prometheus.GaugeValue, float64(s.Admission.Waiting))
}

func newStatsCollector() *statsCollector {
	return &statsCollector{
		generation: prometheus.NewDesc(Namespace+"_generation",
			"The generation the store holds; 0 when none.", nil, nil),
		onDisk: prometheus.NewDesc(Namespace+"_generations_on_disk",
			"Generation directories on disk.", nil, nil),
		leases: prometheus.NewDesc(Namespace+"_leases",
			"Outstanding leases, by generation.", []string{"generation"}, nil),
		prunes: prometheus.NewDesc(Namespace+"_prunes_total",
			"Generation directories removed, by a publish's prune or by reclaim.", nil, nil),
		stalled: prometheus.NewDesc(Namespace+"_removals_stalled",
			"Entries whose removal has run past the removal deadline and still runs (a stuck mount); 0 once they are over.", nil, nil),
		memo: newMemoDescs(),
	}
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.generation
	ch <- c.onDisk
	ch <- c.leases
	ch <- c.prunes
	ch <- c.stalled
	c.memo.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	onDisk := map[int64]bool{}
	leases := map[int64]int{}
	for _, d := range s.Dirs {
		onDisk[d.Identity.Key] = true
		leases[d.Identity.Key] += d.Leases
	}
	ch <- prometheus.MustNewConstMetric(c.generation, prometheus.GaugeValue, float64(s.Current.Key))
	ch <- prometheus.MustNewConstMetric(c.onDisk, prometheus.GaugeValue, float64(len(onDisk)))
	for gen, n := range leases {
		if n > 0 {
			ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(n), strconv.FormatInt(gen, 10))
		}
	}
	ch <- prometheus.MustNewConstMetric(c.prunes, prometheus.CounterValue, float64(s.Reclaims))
	ch <- prometheus.MustNewConstMetric(c.stalled, prometheus.GaugeValue, float64(s.StalledRemovals))
	c.memo.collect(ch, s)
}
