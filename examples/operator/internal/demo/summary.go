package demo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"leasekit.dev/publish"
)

// A Summary is what a run did and found. It marshals to JSON for scripts;
// durations are in milliseconds, in fields whose names end in _ms.
type Summary struct {
	Seed        uint64  `json:"seed"`
	Renders     int     `json:"renders"`     // renders done: RenderCounts.Total
	Concurrency int     `json:"concurrency"` // concurrent render workers
	PlatformDir string  `json:"platform_dir"`
	ElapsedMS   float64 `json:"elapsed_ms"` // publishing and rendering, shutdown excluded
	Interrupted bool    `json:"interrupted"`

	Publishes        PublishCounts     `json:"publishes"`
	ExpectedFailures []ExpectedFailure `json:"expected_failures"` // the first 20; Publishes.BuildFailed counts them all
	Unexpected       []string          `json:"unexpected"`        // outcomes that were not the expected ones, and unexpected errors (the first 20)
	UnexpectedCount  int               `json:"unexpected_count"`

	RenderCounts   RenderCounts `json:"render_counts"`
	RendersPerSec  float64      `json:"renders_per_sec"`
	RenderLatency  Quantiles    `json:"render_latency"`
	RenderFailures []string     `json:"render_failures"` // the first unexpected render failures

	PublishLatency PublishLatency `json:"publish_latency"`

	RenderMemo   RenderMemo   `json:"render_memo"`
	Invalidation Invalidation `json:"invalidation"` // what each publish did to the embedded instances' renders

	MaxOutstandingLeases int64    `json:"max_outstanding_leases"`
	MaxIdleOnDisk        int      `json:"max_idle_on_disk"` // most superseded, unleased directories seen on disk at once
	Outlived             Outlived `json:"outlived"`         // leases held past their generation's supersession

	Reclaimed     int       `json:"reclaimed"` // superseded directories removed, by the reclaim loop or a publish's prune
	ReclaimErrors int       `json:"reclaim_errors"`
	ReclaimDelay  Quantiles `json:"reclaim_delay"` // from reclaimable to removed
	Prunes        uint64    `json:"prunes"`        // directories removed by publishes' prunes and by reclaim

	Violations       int         `json:"violations"`
	ViolationDetails []Violation `json:"violation_details"`
}

// maxListed bounds the expected failures and unexpected outcomes a Summary
// lists in full; it counts every one.
const maxListed = 20

// textListed bounds the expected failures WriteText lists: one of each
// kind of breakage.
const textListed = 3

// textChanges bounds the publishes of new content whose invalidation
// WriteText lists.
const textChanges = 8

// unexpected records an unexpected outcome.
func (s *Summary) unexpected(msg string) {
	s.UnexpectedCount++
	if len(s.Unexpected) < maxListed {
		s.Unexpected = append(s.Unexpected, msg)
	}
}

// RenderMemo is what the Publisher's render memo and admission did.
type RenderMemo struct {
	Hits           uint64  `json:"hits"`
	Misses         uint64  `json:"misses"`
	HitRate        float64 `json:"hit_rate"` // hits over renders, 0 to 1
	Evictions      uint64  `json:"evictions"`
	Entries        int     `json:"entries"` // held at the end
	Bytes          int64   `json:"bytes"`   // accounted at the end
	AdmissionWaits uint64  `json:"admission_waits"`
}

// PublishCounts counts publishes by outcome.
type PublishCounts struct {
	Total       int `json:"total"`
	Published   int `json:"published"`
	Unchanged   int `json:"unchanged"`
	Changed     int `json:"changed"`
	BuildFailed int `json:"build_failed"`
	Stale       int `json:"stale"`
	Failed      int `json:"failed"`
	Cancelled   int `json:"cancelled"` // interrupted by the run's end (Ctrl-C): neither failed nor done
}

// An ExpectedFailure is a deliberately broken generation and the error the
// kernel reported for it.
type ExpectedFailure struct {
	Generation int64  `json:"generation"`
	Breakage   string `json:"breakage"`
	Error      string `json:"error"` // the kernel's first problem, file:line:col first
}

// Quantiles summarise a Histogram, in milliseconds.
type Quantiles struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// PublishLatency splits a publish's time into its steps.
type PublishLatency struct {
	Write Quantiles `json:"write"`
	Build Quantiles `json:"build"`
	Set   Quantiles `json:"set"`
	Prune Quantiles `json:"prune"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func quantiles(h *Histogram) Quantiles {
	return Quantiles{Count: h.Count(), P50: ms(h.Quantile(.5)), P90: ms(h.Quantile(.9)), P99: ms(h.Quantile(.99)), Max: ms(h.Max())}
}

// OK reports whether the run kept every promise: no violation, no
// unexpected outcome, no unexpected render failure, no render that
// disagreed with an earlier one of the same instance and files.
func (s *Summary) OK() bool {
	return s.Violations == 0 && s.UnexpectedCount == 0 && s.RenderCounts.Failed == 0 && s.RenderCounts.Inconsistent == 0 && s.RenderCounts.NotServed == 0
}

// WriteText writes s as a table for people.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	p := s.Publishes
	row("seed", "%d (same seed, same generations and instance choices; timing varies)", s.Seed)
	row("ran", "%.1fs with %d concurrent renders%s", s.ElapsedMS/1000, s.Concurrency, map[bool]string{true: " (interrupted)"}[s.Interrupted])
	row("publishes", "%d: %d published, %d unchanged, %d changed, %d build-failed, %d stale, %d failed, %d cancelled",
		p.Total, p.Published, p.Unchanged, p.Changed, p.BuildFailed, p.Stale, p.Failed, p.Cancelled)
	for i, f := range s.ExpectedFailures {
		if i == textListed {
			row("  expected failure", "and %d more (listed with --json)", p.BuildFailed-textListed)
			break
		}
		row("  expected failure", "generation %d, %s: %s", f.Generation, f.Breakage, f.Error)
	}
	for _, u := range s.Unexpected {
		row("  UNEXPECTED", "%s", u)
	}
	if more := s.UnexpectedCount - len(s.Unexpected); more > 0 {
		row("  UNEXPECTED", "and %d more", more)
	}
	r := s.RenderCounts
	row("renders", "%d: %d ok (%d with skew warnings), %d skew-refused, %d catalog-refused, %d failed, %d cancelled; %d inconsistent; %d refused as nothing was served",
		r.Total, r.OK, r.SkewWarned, r.SkewRefused, r.CatalogRefused, r.Failed, r.Cancelled, r.Inconsistent, r.NotServed)
	for _, f := range s.RenderFailures {
		row("  FAILED", "%s", f)
	}
	q := s.RenderLatency
	row("render latency", "p50 %s  p90 %s  p99 %s  max %s  (%.0f renders/s)", msText(q.P50), msText(q.P90), msText(q.P99), msText(q.Max), s.RendersPerSec)
	m := s.RenderMemo
	row("render memo", "%.0f%% hit rate: %d hits, %d misses, %d evictions; %d entries in %d bytes at the end; %d renders waited for admission",
		100*m.HitRate, m.Hits, m.Misses, m.Evictions, m.Entries, m.Bytes, m.AdmissionWaits)
	v := s.Invalidation
	row("invalidation", "%d publishes after the first invalidated %d of %d renders of the %d instances and left %d valid (%s)",
		v.Publishes, v.Invalidated, v.Invalidated+v.Valid, v.Instances, v.Valid, percent(v.Valid, v.Invalidated+v.Valid)+" valid")
	// The publishes that set a record of new content, the first few: the
	// others leave every render valid.
	var changes []PublishInvalidation
	for _, pi := range v.PerPublish {
		if pi.Outcome == publish.Published.String() || pi.Outcome == publish.Changed.String() {
			changes = append(changes, pi)
		}
	}
	for i, pi := range changes {
		if i == textChanges {
			row("  per publish", "and %d more (every publish listed with --json)", len(changes)-textChanges)
			break
		}
		row("  per publish", "%s", pi)
	}
	l := s.PublishLatency
	row("publish latency", "p50 / max: write %s / %s, build %s / %s, set %s / %s, prune %s / %s",
		msText(l.Write.P50), msText(l.Write.Max), msText(l.Build.P50), msText(l.Build.Max),
		msText(l.Set.P50), msText(l.Set.Max), msText(l.Prune.P50), msText(l.Prune.Max))
	row("leases", "at most %d at once; %d outlived their generation (%d generations kept while leased, up to %s)",
		s.MaxOutstandingLeases, s.Outlived.Leases, s.Outlived.Generations, msText(s.Outlived.LongestMS))
	row("reclaimed", "%d superseded directories removed (%d removals failed and were retried)", s.Reclaimed, s.ReclaimErrors)
	row("reclaim delay", "p50 %s  max %s  (from superseded and last lease released to removed)",
		msText(s.ReclaimDelay.P50), msText(s.ReclaimDelay.Max))
	row("idle on disk", "at most %d superseded, unleased directories at once", s.MaxIdleOnDisk)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range s.ViolationDetails {
		fmt.Fprintf(w, "  VIOLATION %s\n", v)
	}
	if s.Interrupted {
		_, err := fmt.Fprintf(w, "violations: %d (interrupted: the final reclaim check did not run)\n", s.Violations)
		return err
	}
	_, err := fmt.Fprintf(w, "violations: %d\n", s.Violations)
	return err
}

// percent returns n of total as a percentage for people: "40%", or "-"
// of nothing.
func percent(n, total int) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total))
}

// msText formats milliseconds for people.
func msText(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0fms", v)
	default:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".") + "ms"
	}
}
