package platform_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
)

// A skew policy the kernel does not know is refused before anything is
// touched, naming the policy: a new generation, the current one with the
// same files, and the current one with changed files alike.
func TestPublishRefusesUnknownSkew(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	rec, err := p.Publish(ctx, 1, moduletest.Variant(0), kernel.SkewRefuse)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gen     int64
		variant int
	}{{2, 1}, {1, 0}, {1, 1}} {
		for _, skew := range []kernel.SkewPolicy{-1, 2, 7} {
			_, err := p.Publish(ctx, c.gen, moduletest.Variant(c.variant), skew)
			var se *platform.SkewPolicyError
			if !errors.As(err, &se) || !errors.Is(err, platform.ErrInvalidSkew) || se.Policy != skew || se.Generation != c.gen ||
				!strings.Contains(err.Error(), skew.String()) {
				t.Fatalf("Publish(%d, variant %d, skew %v): %v, want a SkewPolicyError naming it", c.gen, c.variant, skew, err)
			}
			if got, ok := p.Store().Generated(); !ok || got != rec {
				t.Fatalf("after the refusal the store holds %+v, want %+v", got, rec)
			}
			checkTree(t, rec.Dir, moduletest.Variant(0))
			if g := generations(t, p); len(g) != 1 || g[0] != 1 {
				t.Fatalf("Generations() = %v, want [1]", g)
			}
		}
	}
}
