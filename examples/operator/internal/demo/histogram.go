package demo

import (
	"math"
	"time"
)

// A Histogram records durations in logarithmic buckets about 2% wide, so
// its memory is fixed however many it records and its quantiles are within
// 2% of the truth. The zero value is empty and ready to use. A Histogram is
// not safe for concurrent use.
type Histogram struct {
	counts   [histogramBuckets]uint64
	n        uint64
	min, max time.Duration
	sum      time.Duration
}

const (
	histogramGrowth = 1.02
	// histogramBuckets covers 1ns to more than an hour.
	histogramBuckets = 1500
)

var logGrowth = math.Log(histogramGrowth)

func bucketOf(d time.Duration) int {
	if d <= 1 {
		return 0
	}
	b := int(math.Log(float64(d))/logGrowth) + 1
	return min(b, histogramBuckets-1)
}

// upper returns the largest duration bucket b holds.
func upper(b int) time.Duration {
	if b == 0 {
		return 1
	}
	return time.Duration(math.Exp(float64(b) * logGrowth))
}

// Record adds d; a negative d counts as 0.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
	h.counts[bucketOf(d)]++
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest duration recorded, 0 when none.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the mean of the recorded durations, 0 when none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the duration below which a fraction q (0 to 1) of the
// recorded durations lie, clamped to the smallest and largest recorded; 0
// when none were recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(max(upper(b), h.min), h.max)
		}
	}
	return h.max
}

// Merge adds every duration o recorded to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
	for b, c := range o.counts {
		h.counts[b] += c
	}
}
