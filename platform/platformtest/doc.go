// Package platformtest checks a platform reconciler's headline promise, in
// the manner of [testing/fstest.TestFS]: a leased directory is never
// removed or changed. [Check] drives a user's own [Target] (a reconciler
// that calls [platform.Store] and [platform.Layout] by hand, or one built
// on [platform.Publisher]) through random sequences with
// [pgregory.net/rapid] and fails the test when a property breaks.
//
// Check draws new generations, same-generation changes, identical
// re-reconciles, stale generations, modules that fail to build, deletes,
// restarts (a new target on the same root) and renders: some lease, read
// and release between steps, some hold their lease across many steps,
// some lease in a loop while a Reconcile or Delete runs, and some lease
// before one starts and hold their lease until it returns, rendering with
// the kernel meanwhile (a render between steps does so too, at times).
// Every render holds its directory open while it reads, as the kernel
// does through an [os.Root]. Check checks exactly these properties:
//
//  1. No leased directory is removed or changed. Its path names the very
//     directory that was leased, not another one put in its place, even
//     an identical copy, and that directory holds the same bytes.
//  2. The store holds only records renders can read: its Platform was
//     built from its Dir (the same absolute, clean path: renders read the
//     Platform's directory, leases protect Dir), which is complete, holds
//     the files of the last Reconcile of its generation that returned nil
//     since the last Delete or restart, and renders with the kernel.
//  3. A stale generation (older than the record the store holds now)
//     never replaces it. After a Delete or a restart nothing is stale.
//  4. Once every lease is released and a Reconcile of the current
//     generation with its files has returned nil (Check retries one that
//     fails), Root holds only the current record's directory, after a
//     wait for a target whose reclaim runs in the background
//     ([ReclaimWait]). Check ignores the layout's own files
//     ([dirlife.MarkerFile] where the filesystem holds no extended
//     attributes, [dirlife.LockFile] on Windows).
//  5. A Reconcile that returns nil serves its generation: a module that
//     builds, at a generation no older than the one the store holds,
//     leaves the store serving that generation with those files, or a
//     newer one. A module that does not build may return nil, as a
//     controller that records a terminal failure in status does. After a
//     Delete that returns nil, nothing is served.
//
// Check never requires a Reconcile to succeed, an identical re-reconcile
// to be a no-op, a failed reconcile to keep the previous record serving, or
// a lease never to be refused: those are the stricter properties
// [ReconcilesSucceed], [IdenticalIsNoop], [FailureKeepsServing] and
// [LeasesNeverRefused].
//
// # Writing a reconciler
//
// A reconciler that calls Store and Layout by hand keeps three rules, and
// Check catches each one broken:
//
//  1. Set before prune. Write, build, SetGenerated (refusing a stale
//     generation), then Prune to the current generation and every one in
//     Store.Leased. A prune before the set removes the directory the store
//     still serves (property 2); a keep set without Leased removes one a
//     render holds (property 1).
//  2. An identical reconcile writes nothing, and still prunes. Layout.Write
//     of the same files swaps a copy in for the directory renders hold,
//     which property 1 reports as changed; the prune removes what renders
//     released since (property 4).
//  3. The current generation's files change only in a directory no render
//     holds. Clear the store, so that no new lease starts, and write once
//     Store.Leased no longer holds the generation, or set the record back
//     and return an error for the controller to retry. A write over a
//     leased directory changes it (property 1). A Publisher writes the new
//     files beside the old ones instead.
//
// Whichever path it takes, a Reconcile returns nil only once the store
// serves its generation (property 5): a requeue is not a success.
//
// # Failures
//
// The properties are decided at step boundaries, from what Check holds and
// reads once a step is over: the record the store holds, and each lease
// held across the step with its directory held open. A render holds its
// lease through every identical reconcile, and through some new
// generations, stale generations, failing builds of a new generation and
// deletes (steps a correct reconciler takes without waiting for its
// readers); it is checked once the step returns. So a sequence that fails
// fails again when it runs again, and Check shrinks it by whole steps: it
// records each step's action and the choices it drew, and runs shorter
// sequences made from them on a fresh Root (runs of adjacent steps left
// out, any two steps left out together, each choice lowered), keeping one
// that breaks the same property, until none is shorter or [ShrinkRuns]
// sequences have run. It runs the result once more, and reports it once,
// in words, after the property and what broke it: "reconcile 1 (module 0,
// new generation); reconcile 1 (identical), while a render holds
// generation 1".
//
// What a render leasing in a loop while a Reconcile or Delete runs sees
// depends on the scheduler, as a refused lease does for
// LeasesNeverRefused: a rerun of the sequence may not see it, so it fails
// no sequence. When every sequence has passed its checks at step
// boundaries, Check fails the test with the shortest sequence in which
// such a render saw a property broken.
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
// Where the system refuses to remove a directory that is open (Windows),
// a target's removal of a leased directory fails rather than goes
// unseen.
package platformtest
