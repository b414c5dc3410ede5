package demo

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestHistogramModel records random durations into a Histogram and a plain
// slice and checks after every step that the Histogram's count, max, mean
// and quantiles agree with the slice's, quantiles within the bucket width.
func TestHistogramModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h, other Histogram
		var model, otherModel []time.Duration
		t.Repeat(map[string]func(*rapid.T){
			"record": func(t *rapid.T) {
				d := time.Duration(rapid.Int64Range(-10, int64(time.Hour)).Draw(t, "d"))
				h.Record(d)
				model = append(model, max(d, 0))
			},
			"merge": func(t *rapid.T) {
				d := time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "d"))
				other.Record(d)
				otherModel = append(otherModel, d)
				h.Merge(&other)
				model = append(model, otherModel...)
				other, otherModel = Histogram{}, nil
			},
			"": func(t *rapid.T) {
				if h.Count() != uint64(len(model)) {
					t.Fatalf("Count %d, want %d", h.Count(), len(model))
				}
				if len(model) == 0 {
					if h.Quantile(.5) != 0 || h.Max() != 0 || h.Mean() != 0 {
						t.Fatal("an empty histogram reports durations")
					}
					return
				}
				sorted := slices.Sorted(slices.Values(model))
				if h.Max() != sorted[len(sorted)-1] {
					t.Fatalf("Max %v, want %v", h.Max(), sorted[len(sorted)-1])
				}
				var sum time.Duration
				for _, d := range model {
					sum += d
				}
				if h.Mean() != sum/time.Duration(len(model)) {
					t.Fatalf("Mean %v, want %v", h.Mean(), sum/time.Duration(len(model)))
				}
				for _, q := range []float64{0, .5, .9, .99, 1} {
					rank := max(int(float64(len(sorted))*q+0.999999), 1)
					want := sorted[rank-1]
					got := h.Quantile(q)
					lo, hi := float64(want)/histogramGrowth-1, float64(want)*histogramGrowth+1
					if float64(got) < lo || float64(got) > hi {
						t.Fatalf("Quantile(%v) = %v, want %v within 2%% (of %d)", q, got, want, len(sorted))
					}
				}
			},
		})
	})
}
