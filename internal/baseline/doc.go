// Package baseline holds the straightforward implementations that leasekit's
// benchmarks measure against: what a controller author writes first, with
// one mutex and no cleverness. They are correct, and deliberately simple; a
// leasekit type earns its place only by beating them by a measured margin.
//
// Everything here is safe for concurrent use by multiple goroutines.
package baseline
