package kernel_test

import (
	"context"
	"errors"
	"testing"

	"leasekit.dev/platform/kernel"
)

// flipCtx is a context that is live for its first n Err calls and
// cancelled from then on: it cancels a call between any two of its steps.
type flipCtx struct {
	context.Context
	n int
}

func (c *flipCtx) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// TestCancelledMidway cancels a build and a render after each of their
// steps in turn: each stops with context.Canceled, and the first n that
// lets a call finish gives the result an uncancelled call gives.
func TestCancelledMidway(t *testing.T) {
	k := kernel.New()
	dir := generated(t, acme)
	steps := 0
	for n := 0; ; n++ {
		p, err := k.BuildPlatform(&flipCtx{context.Background(), n}, dir)
		if err == nil {
			if p.Name != "acme" {
				t.Fatalf("build finished with %+v", p)
			}
			steps = n
			break
		}
		if !errors.Is(err, context.Canceled) || p != nil {
			t.Fatalf("build cancelled after %d checks = (%v, %v), want context.Canceled", n, p, err)
		}
	}
	if steps < 3 {
		t.Fatalf("BuildPlatform checks its context %d times, want one between each of its steps", steps)
	}

	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	in := shop(p, "v1.0.0", 3)
	for n := 0; ; n++ {
		out, err := k.Render(&flipCtx{context.Background(), n}, in)
		if err == nil {
			if len(out.Resources) != 3 {
				t.Fatalf("render finished with %+v", out)
			}
			if n < 4 {
				t.Fatalf("Render checks its context %d times, want one between each of its steps", n)
			}
			return
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("render cancelled after %d checks = %v, want context.Canceled", n, err)
		}
	}
}
