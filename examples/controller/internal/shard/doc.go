// Package shard runs a replica's membership of a ring of controller
// replicas on Kubernetes: a coordination.k8s.io/v1 Lease of its own,
// renewed, which publishes the part of the hash space it claims; the
// other replicas' Leases, watched, whose renewals say who is live; and
// the handover of [leasekit.dev/examples/controller/internal/ring]
// between them. It also narrows a replica's informer of the sharded kind
// to the part it covers, on the API server where it honours
// ListOptions.ShardSelector, and on the client always.
package shard
