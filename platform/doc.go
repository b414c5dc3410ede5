// Package platform holds the process-local platform store: a single-slot,
// concurrency-safe holder of the platform module generated and built from
// the cluster-singleton Platform resource. It is written by the reconciler
// and read by the render path. It also owns [Layout], the on-disk lifecycle
// of the generated module directories the store records (per-generation
// directories, staging swaps, retention, boot reset); the module content
// itself comes from the [platformmodule] generator.
//
// The store records one [Generated] platform module per Platform resource
// generation: the module directory on the process's own disk, the platform
// value the [kernel] built from it and the resolved catalog-skew policy. A
// render leases the record for its duration ([Store.Lease]) so the
// reconciler never prunes a module directory a render is still reading
// from.
//
// [Publisher] makes the safe order the only order: it is the generic
// [publish.Publisher] with the generation as key and the kernel's
// BuildPlatform as build step, and its [Store] is the very slot that one
// sets and leases from. [Publisher.Boot] empties Root before any reader
// exists; [Publisher.Publish] writes, builds, sets and removes what is
// neither current nor leased, one call at a time, refusing a stale
// generation and doing nothing for an identical re-publish. Directories
// never change once published: a changed module at the current
// generation is written beside the current one (gen-<n>-<digest>) and
// swapped in, so no render is refused and no Publish waits for one.
// [Publisher.Run] removes a replaced directory as soon as its last lease
// is released; [Publisher.Render] leases, renders and releases in one
// call. The promise it keeps: a leased directory is never removed, and
// its contents never change while it is leased.
//
// Renders cost a lookup when nothing they read changed: the Publisher
// keeps a memo of render results keyed on everything a result is a
// function of ([RenderKey]: the digest of what the render reads of the
// platform, which the kernel computes without evaluating
// ([kernel.Reads.Dependencies]), the instance's digest, the evaluator's
// Limits), bounded by a byte budget with least-recently-used eviction. An
// entry outlives the generation it was rendered against: a new generation
// that bumps a catalog an instance does not require leaves that
// instance's key as it was, and its render hits. A result that names the
// platform's directory is bound to it, and goes when it is reclaimed. A
// hit is a copy, equal to a fresh render against the current generation;
// [Publisher.Key] tells, without evaluating, whether a render's result
// can differ from one recorded.
// Renders that miss evaluate once per key, and are admitted by the bytes
// they read, so that cold renders at once stay within a bound. The memo
// belongs to the Publisher; the [kernel.Kernel] retains nothing.
//
// Concurrency: [Store] is safe for concurrent use by multiple goroutines,
// and leasing and releasing its current record take no lock but when they
// race a change of the record. [Layout]'s methods are safe for concurrent
// use by goroutines and processes. [Publisher] is safe for concurrent use;
// it serialises Boot, Publish, Forget and every prune, and never calls
// OnPublish or OnReclaim while holding a lock. The store carries no kernel
// gate: the [kernel.Kernel] is safe for concurrent use, so renders overlap
// with no mutex.
//
// The reclaim loop is [Publisher.Run] (or Start), on the caller's
// goroutine; Run starts one goroutine of its own, to wait for removals,
// and ends it before it returns. A render that misses the memo evaluates
// on a goroutine of its own, which the renders of its key wait for. While
// Run runs, Publish leaves the removal of the generation it superseded to
// it, so Root may briefly hold that directory; without it, Publish and
// Forget prune before they return. A [Layout] removes what it prunes
// before Prune returns; the Publisher's prunes only take directories out
// of their paths, and their removal runs in the background, so that a
// removal that hangs never holds the Publisher's serialisation. Run waits
// for those removals after each pass, off the serialisation, and reports
// (Stats, OnReclaim) and retries with backoff one that failed or ran past
// RemovalDeadline; [Publisher.Settle] and [Layout.Settle] wait for them
// too. To wait until a released generation's directory is gone, call
// [Publisher.Reclaim], then [Publisher.Settle], after the release.
//
// Limits: a lease protects a directory from the Publisher's removals,
// not from another writer of Root; Root belongs to
// one Publisher. A process that dies takes its leases with it: the next
// process boots, which empties Root, before any reader exists. A release
// function that is never called keeps its generation's directory for the
// life of the process ([Store.ReportLeaks] reports it).
package platform
