package kernel

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// emptyJoin is an error that joins nothing.
type emptyJoin struct{}

func (emptyJoin) Error() string   { return "nothing joined" }
func (emptyJoin) Unwrap() []error { return nil }

// TestAsErrorKeepsEveryFailure: whatever shape an error has, asError
// returns a failure, never nil, and a plain one.
func TestAsErrorKeepsEveryFailure(t *testing.T) {
	skew := &SkewError{Path: "example.com/web@v1", InstanceVersion: "1.1.0", PlatformVersion: "v1.0.0"}
	for _, err := range []error{
		emptyJoin{},
		errors.Join(skew, emptyJoin{}),
		fmt.Errorf("wrapped: %w", skew),
		fmt.Errorf("loading: %w", context.Canceled),
	} {
		got := asError("render", "instance", err)
		if got == nil {
			t.Fatalf("asError(%v) = nil", err)
		}
		if _, ok := plainOf(got); !ok {
			t.Fatalf("asError(%v) = %#v, not plain data", err, got)
		}
		if got.Error() == "" || errors.Is(got, context.Canceled) != errors.Is(err, context.Canceled) ||
			errors.As(got, new(*SkewError)) != errors.As(err, new(*SkewError)) {
			t.Fatalf("asError(%v) = %v, which matches context.Canceled or a *SkewError where the error did not, or the reverse", err, got)
		}
	}
	if got := asError("render", "instance", errors.Join(skew, skew)); !errors.As(got, new(*SkewError)) {
		t.Fatalf("a join of skew errors came back as %v", got)
	}
}
