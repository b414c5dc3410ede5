package depth_test

import (
	"flag"
	"testing"

	"leasekit.dev/internal/testkit/depth"
)

func TestAtLeast(t *testing.T) {
	if depth.AtLeast(1) {
		t.Fatal("AtLeast(1) with no rapid.checks flag defined: true, want false")
	}
	checks := flag.Int("rapid.checks", 20, "")
	for _, c := range []struct {
		checks, n int
		want      bool
	}{{20, 20, true}, {20, 100, false}, {100, 100, true}, {1000, 100, true}} {
		*checks = c.checks
		if got := depth.AtLeast(c.n); got != c.want {
			t.Errorf("rapid.checks=%d: AtLeast(%d) = %v, want %v", c.checks, c.n, got, c.want)
		}
	}
}
