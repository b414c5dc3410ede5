package demo_test

import (
	"fmt"
	"time"

	"leasekit.dev/examples/operator/internal/demo"
)

// A stream is a function of its seed: the same seed gives the same
// generations, and every stream opens with each kind of publish.
func ExampleStream() {
	s := demo.NewStream(1)
	for range 7 {
		st := s.Next()
		fmt.Printf("%-7s generation %d: %s\n", st.Kind, st.Generation, st.Change)
	}
	// Output:
	// new     generation 1: boot: web@v1 v1.2.0, db@v0 v0.2.0, batch@v2 v2.0.0
	// new     generation 2: add example.com/catalogs/queue@v1 v1.0.0
	// repeat  generation 2: repeat: the same generation, identical files
	// relabel generation 2: relabel example.com/rollout=wave-2
	// broken  generation 3: broken: syntax error: an unclosed brace in platform.cue
	// new     generation 4: add example.com/catalogs/cache@v1 v1.0.0, skew policy Refuse
	// stale   generation 1: stale: generation 1 arrives after 4
}

// Quantiles come from buckets about 2% wide: the median of 1ms to 100ms,
// 50ms, reads as 51ms.
func ExampleHistogram() {
	var h demo.Histogram
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	fmt.Println(h.Count(), h.Max())
	fmt.Println(h.Quantile(0.5).Round(time.Millisecond), h.Quantile(0.99).Round(time.Millisecond))
	// Output:
	// 100 100ms
	// 51ms 100ms
}
