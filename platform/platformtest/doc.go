// Package platformtest checks a platform reconciler's headline promise, in
// the manner of [testing/fstest.TestFS]: a leased directory is never
// removed or changed. [Check] drives a user's own [Target] (a reconciler
// that calls [platform.Store] and [platform.Layout] by hand, or one built
// on [platform.Publisher]) through random sequences with
// [pgregory.net/rapid] and fails the test when a property breaks.
//
// Check draws new generations, same-generation changes, identical
// re-reconciles, stale generations, modules that fail to build, deletes,
// restarts (a new target on the same root) and renders that lease, read
// their directory and release, some holding their lease across many steps.
// After every step it checks exactly these properties:
//
//  1. No leased directory is removed or changed (byte for byte).
//  2. The store never holds a record whose directory (its Dir, wherever
//     the target puts it) is absent, partial, or not the files of the last
//     Reconcile of that generation that returned nil, since the last
//     Delete or restart.
//  3. A stale generation — older than the record the store holds now —
//     never replaces it. After a Delete or a restart nothing is stale.
//  4. Once every lease is released and a Reconcile of the current
//     generation with its files has returned nil (Check retries one that
//     fails), Root holds only the current record's directory, after a
//     bounded wait for a target whose reclaim runs in the background
//     ([ReclaimWait]). Check ignores the layout's own files
//     ([dirlife.MarkerFile] where the filesystem holds no extended
//     attributes, [dirlife.LockFile] on Windows).
//
// Check never requires a Reconcile to succeed, an identical re-reconcile
// to be a no-op, a failed reconcile to keep the previous record serving, or
// a lease never to be refused: those are the stricter properties
// [ReconcilesSucceed], [IdenticalIsNoop], [FailureKeepsServing] and
// [LeasesNeverRefused]. A failure is shrunk to a minimal sequence and
// reported in words ("reconcile 1 (module 0, new generation); lease #1
// held (generation 1); reconcile 2 (module 3, new generation)").
//
// Concurrency: Check calls a target's Reconcile and Delete from one
// goroutine, one at a time, and its Store's Lease from other goroutines,
// also while a Reconcile or Delete runs. A Reconcile that waits for a
// reader is not stuck: after [ReleaseHeldAfter] Check releases every lease
// it holds, as renders that finish would.
//
// Limits: Check knows the directories a target uses only through the
// records its store holds, and Root only through its listing. It runs in
// the test's process, so a restart drops the old process's leases rather
// than killing it; crashes mid-write are dirlife's own tests' concern.
package platformtest
