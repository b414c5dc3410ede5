// Operator is a platform operator's main job in one process, against the
// real CUE kernel and a real directory, with nothing to install or
// configure:
//
//	go run ./examples/operator
//
// It boots a platform.Publisher on a platform directory (a fresh
// temporary one unless --platform-dir names one), runs its reclaim loop and
// publishes a stream of platform generations made by
// platformmodule.Generate: catalogs added, bumped, disabled and enabled
// again; now and then the same generation again (unchanged), the current
// generation with changed labels (written beside the leased one and
// swapped in, so no render is refused), a late
// older generation (stale) and a deliberately broken module the kernel
// refuses (a build failure, named in the summary). Meanwhile a pool of
// concurrent renders leases the store and renders embedded instance
// modules, some written against newer catalogs than the platform carries,
// under both skew policies, each render holding its lease for a random
// time.
//
// Every lease is checked from the outside: its directory must exist and
// hold the files published for its generation when leased, and be
// unchanged when released; a superseded generation's directory must be
// gone soon after its last lease is released. A live status line shows
// progress (redrawn in place on a terminal, plain periodic lines
// elsewhere); a summary follows, ending with "violations: N". The exit
// status is 0 only when there were no violations and nothing unexpected
// happened; 1 otherwise; 2 for bad flags or a directory it may not use
// (a --platform-dir it does not own, a --render DIR that is missing or
// not a directory); 130 when interrupted (Ctrl-C) with no violation, the
// interrupted publish counted as cancelled. Under go run, the go command
// reports any status but 0 as its own exit status 1, after a line "exit
// status N"; build the command to see N itself.
//
// With --render DIR it publishes one default generation and renders the
// instance module in DIR against it, printing the resources as YAML and
// diagnostics and errors as the kernel reports them (file:line:col); with
// --json, the resources or an error object on stdout.
//
// Builds and renders are evaluated in worker processes (the command
// itself started again), each killed past --render-timeout or
// --render-memory, so that an instance whose evaluation would take CUE
// minutes or gigabytes fails, naming the budget, and the rest go on;
// --in-process evaluates in the command's own process instead.
//
// Run it with -h for the flags. The machinery is the package
// leasekit.dev/examples/operator/internal/demo.
package main
