//go:build unix

package cputime_test

import (
	"testing"
	"time"

	"leasekit.dev/internal/testkit/cputime"
)

// TestProcessCounts: on unix the CPU time is reported and grows while
// this goroutine works: by 20ms within ten seconds of the wall clock,
// however busy the machine.
func TestProcessCounts(t *testing.T) {
	start, ok := cputime.Process()
	if !ok || start < 0 {
		t.Fatalf("Process() = %v, %v at the start", start, ok)
	}
	const want, within = 20 * time.Millisecond, 10 * time.Second
	wall := time.Now()
	for {
		now, ok := cputime.Process()
		if !ok || now < start {
			t.Fatalf("Process() = %v, %v after %v at the start", now, ok, start)
		}
		if now-start >= want {
			return
		}
		if time.Since(wall) > within {
			t.Fatalf("Process() went from %v to %v over %v of work, want %v more", start, now, within, want)
		}
	}
}
