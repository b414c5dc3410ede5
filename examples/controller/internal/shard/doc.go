// Package shard runs a replica's membership of a ring of controller
// replicas on Kubernetes: a coordination.k8s.io/v1 Lease of its own,
// renewed, which publishes the part of the hash space it claims; the
// other replicas' Leases, watched, whose renewals say who is live; and
// the handover of [leasekit.dev/examples/controller/internal/ring]
// between them. It also narrows a replica's informer of the sharded kind
// to the part it covers, on the API server where it honours
// ListOptions.ShardSelector, and on the client always.
//
// The promise: no two members write for one hash, whatever the Leases
// say, so long as no one edits a live member's claim annotation. The
// ring counts nothing as gone that it only failed to see: every Lease
// with the ring's label counts, with its claim, until a lease duration
// of the observer's own after it last changed or was seen gone. That
// covers a Lease deleted by hand (unless its last claim was empty: a
// clean leave publishes an empty claim, then deletes), a Lease found
// gone by a relist (it claimed anything), a Lease taken over by another
// incarnation (the earlier claim still counts), and hand-made Leases. A
// Lease not of a member's shape (named <ring>-<holderIdentity>, a claim
// that parses) is never a member and is reported (log, the
// foreign_leases metrics, an event where Config.Recorder is set); an
// announced lease duration other than the member's own is reported and
// never honoured beyond its own, so no Lease holds a part longer than a
// lease duration after its last change. A member ends its own writes
// within the shortest lease duration a live member announces, so members
// configured with different durations stay safe during a rollout.
//
// Two replicas with one identity: the later finds the Lease held by
// another incarnation ([IncarnationAnnotation]) and writes for nothing
// until that Lease has not changed for a lease duration (at once when it
// claims nothing), marks it ([WaitingAnnotation]) so that its holder
// learns of it, and both say so: a log line, an event, the
// incarnation_conflicts_total counter, and incarnation_waiting and
// [Member.Ready] on the waiting one.
//
// A member takes nothing until it has watched the ring for a lease
// duration: a Lease deleted before it first looked leaves no evidence of
// a holder that may still write. A Lease that lived and was deleted
// while a member's watch was cut for its whole life leaves none either;
// the member's validating read (a quorum list) is then the only guard.
//
// [Member.Start] fails within its first renew period with an
// [*AccessError] (verb, resource, namespace) when the API server refuses
// it the Leases (RBAC), and [Member.Ready] says not ready until it holds
// its Lease and renewed it in time to write.
//
// A [Member] is safe for concurrent use by multiple goroutines. Its
// OnChange function and its recorder are called from the member's
// goroutines with no lock of its held.
package shard
