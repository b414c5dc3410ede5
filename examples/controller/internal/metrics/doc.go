// Package metrics exposes a [platform.Publisher]'s work as Prometheus
// metrics: outstanding leases by generation, generations on disk, publishes
// by outcome, prunes, the reclaim delay, and the latency of renders and of
// each publish phase.
//
// [Metrics.ObservePublish] and [Metrics.ObserveReclaim] are the Publisher's
// OnPublish and OnReclaim hooks; the gauges and the prune counter are read
// from [platform.Publisher.Stats] at each scrape, so they are never stale.
// Every method is safe for concurrent use by multiple goroutines.
package metrics
