package bench

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"leasekit.dev/internal/testkit/cputime"
)

// impl is one of the implementations a benchmark measures side by side:
// name is its impl= label, and setup prepares it under b, outside the
// timer, and returns what one iteration runs.
type impl struct {
	name  string
	setup func(b *testing.B) (op func() error)
}

// measure runs a sub-benchmark prefix+"impl="+name for each of impls,
// timing its op with b.Loop and reporting its allocations and CPU time
// per operation; an op's error fails the sub-benchmark.
func measure(b *testing.B, prefix string, impls ...impl) {
	for _, im := range impls {
		b.Run(prefix+"impl="+im.name, func(b *testing.B) {
			op := im.setup(b)
			b.ReportAllocs()
			start, _ := cputime.Process()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, start)
		})
	}
}

// measureParallel is measure with the op run from GOMAXPROCS goroutines
// at once, by b.RunParallel: each op must be safe for concurrent use.
func measureParallel(b *testing.B, impls ...impl) {
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			op := im.setup(b)
			b.ReportAllocs()
			b.ResetTimer()
			start, _ := cputime.Process()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportCPU(b, start)
		})
	}
}

// reportCPU reports the process's CPU time per operation, as cpu-ns/op,
// for a benchmark that called it with the loop's start.
func reportCPU(b *testing.B, start time.Duration) {
	if end, ok := cputime.Process(); ok && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// TestMeasure: measure and measureParallel run every impl's setup and
// then its op, and fail a sub-benchmark whose op fails.
func TestMeasure(t *testing.T) {
	for name, run := range map[string]func(*testing.B, ...impl){
		"measure":         func(b *testing.B, impls ...impl) { measure(b, "", impls...) },
		"measureParallel": measureParallel,
	} {
		var setups, ops atomic.Int64
		counting := impl{"counting", func(*testing.B) func() error {
			setups.Add(1)
			return func() error { ops.Add(1); return nil }
		}}
		failing := impl{"failing", func(*testing.B) func() error {
			return func() error { return errors.New("the op failed") }
		}}
		var failed bool
		testing.Benchmark(func(b *testing.B) { run(b, counting); failed = b.Failed() })
		if failed || setups.Load() == 0 || ops.Load() < setups.Load() {
			t.Fatalf("%s: failed %v, %d setups, %d ops", name, failed, setups.Load(), ops.Load())
		}
		testing.Benchmark(func(b *testing.B) { run(b, failing); failed = b.Failed() })
		if !failed {
			t.Fatalf("%s: a failing op passed", name)
		}
	}
}
