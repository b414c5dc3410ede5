// Package bench is leasekit's side-by-side benchmark suite: each hot
// operation of a leasekit type is measured beside the same operation of its
// straightforward counterpart in [leasekit.dev/internal/baseline], in one
// run, as sub-benchmarks impl=leasekit and impl=baseline (impl=naive for
// the CUE kernel, beside [leasekit.dev/internal/baseline.NaiveKernel]), so
// that their ratio can be read off one invocation:
//
//	go test -run '^$' -bench . -count 6 leasekit.dev/internal/bench
package bench
