// Package baseline holds the straightforward implementations that leasekit's
// benchmarks measure against: what a controller author writes first, with
// one mutex and no cleverness. They are correct, and deliberately simple; a
// leasekit type earns its place only by beating them by a measured margin.
//
// [NaiveKernel] is the CUE kernel written the documented way (cue/load,
// cuecontext, unify, validate, export JSON). It evaluates the kernel's own
// vocabulary: a copy of the CUE files of leasekit.dev/platform/kernel,
// whose embedded copies are unexported and whose internal packages are
// not importable from here; a test holds the copies equal.
//
// Everything here is safe for concurrent use by multiple goroutines.
package baseline
