package shard

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsNamespace prefixes the ring's metrics.
const MetricsNamespace = "leasekit_ring"

// RegisterMetrics registers the member's metrics with reg, each read from
// [Member.Status] at each scrape: members (live, as seen), target_start
// and target_end (its target's bounds, as a share of the hash space from
// 0 to 1), writing_ratio (the share it writes for), handovers_total
// {direction: gained, lost}, server_side (1 when the API server honours
// the shard selector, 0 when the cache filters on the client, -1 not yet
// known), ready (1 when [Member.Ready] is nil), foreign_leases (Leases of
// the ring not of its shape that count until they expire),
// deleted_leases (Leases seen deleted with a claim, counted until they
// expire), incarnation_waiting (1 while another incarnation of this
// identity holds its Lease), incarnation_conflicts_total (meetings of two
// incarnations of this identity), foreign_leases_seen_total,
// renew_failures_total, and owned (owned(), the objects it writes for).
// On failure it unregisters what it registered.
func (m *Member) RegisterMetrics(reg prometheus.Registerer, owned func() int) error {
	gauge := func(name, help string, f func(Status) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: MetricsNamespace, Name: name, Help: help},
			func() float64 { return f(m.Status()) })
	}
	cs := []prometheus.Collector{
		gauge("members", "Live members of the ring, as this replica sees them, itself included.", func(s Status) float64 { return float64(s.Members) }),
		gauge("target_start", "Start of this replica's target, as a share of the hash space (0 to 1).", func(s Status) float64 {
			if len(s.Target) == 0 {
				return 0
			}
			return float64(s.Target[0].Lo) / (1 << 64)
		}),
		gauge("target_end", "End of this replica's target, as a share of the hash space (0 to 1).", func(s Status) float64 {
			if len(s.Target) == 0 {
				return 0
			}
			return (float64(s.Target[len(s.Target)-1].Hi) + 1) / (1 << 64)
		}),
		gauge("writing_ratio", "Share of the hash space this replica writes for now.", func(s Status) float64 { return s.Writing.Fraction() }),
		gauge("server_side", "1 when the API server honours the shard selector, 0 when the cache filters on the client, -1 not yet known.", func(s Status) float64 {
			switch {
			case !s.Known:
				return -1
			case s.ServerSide:
				return 1
			}
			return 0
		}),
		gauge("ready", "1 when this replica holds its Lease and renewed it in time to write, 0 otherwise (see the readiness check).", func(Status) float64 {
			if m.Ready(nil) == nil {
				return 1
			}
			return 0
		}),
		gauge("foreign_leases", "Leases labelled with the ring that are not of a member's shape (name, holder, claim), counted with their claim until they expire; never a member.", func(s Status) float64 { return float64(s.Foreign) }),
		gauge("deleted_leases", "Members' Leases seen deleted while they claimed a part, counted until a lease duration after they were last seen.", func(s Status) float64 { return float64(s.Deleted) }),
		gauge("incarnation_waiting", "1 while another incarnation of this replica's identity holds its Lease: this replica writes for nothing until that Lease expires.", func(s Status) float64 {
			if s.Waiting != "" {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: MetricsNamespace, Name: "incarnation_conflicts_total", Help: "Meetings of two incarnations of this replica's identity (two replicas run with one identity): found its Lease held by another, taken over, or waited for."},
			func() float64 { return float64(m.metrics.incarnationConflicts.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: MetricsNamespace, Name: "foreign_leases_seen_total", Help: "Changes seen to Leases labelled with the ring that are not of a member's shape."},
			func() float64 { return float64(m.metrics.foreignSeen.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: MetricsNamespace, Name: "renew_failures_total", Help: "Renewals of this replica's Lease that failed."},
			func() float64 { return float64(m.metrics.renewFailures.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: MetricsNamespace, Name: "handovers_gained_total", Help: "Parts of the hash space this replica took from the ring."},
			func() float64 { return float64(m.Status().Gained) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: MetricsNamespace, Name: "handovers_lost_total", Help: "Parts of the hash space this replica handed over to the ring."},
			func() float64 { return float64(m.Status().Lost) }),
	}
	if owned != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: MetricsNamespace, Name: "owned", Help: "Objects of the sharded kind this replica writes for."},
			func() float64 { return float64(owned()) }))
	}
	var done []prometheus.Collector
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, d := range done {
				reg.Unregister(d)
			}
			return errors.Join(errors.New("shard: register metrics"), err)
		}
		done = append(done, c)
	}
	return nil
}
