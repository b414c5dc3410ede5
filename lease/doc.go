// Package lease counts outstanding leases per key, so that whoever owns a
// keyed resource (a generation's directory, a cache entry) can tell which
// keys are in use and wait until one, or all of them, is released.
//
// A [Counter] hands out a [Lease] for a key with [Counter.Acquire]; the key
// stays leased until every lease on it is released. [Counter.Leased] lists
// the leased keys, [Counter.Wait] blocks until one key drains and
// [Counter.WaitIdle] until none is leased. Leak reporting
// ([Counter.ReportLeaks]) is opt-in: a lease that becomes unreachable without
// being released is reported to a hook, never released behind its holder's
// back.
//
// Keys are compared with ==, as map keys are. A floating-point NaN equals
// nothing, so it cannot be a key: [Counter.Acquire] panics on NaN, and
// [Counter.Count] and [Counter.Wait] treat it as a key that is never leased.
// -0.0 and +0.0 are equal, so they are one key.
//
// A Counter is safe for concurrent use by multiple goroutines without
// additional locking or coordination. No caller-supplied function ever runs
// while a Counter holds its lock.
package lease
