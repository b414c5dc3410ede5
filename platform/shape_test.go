package platform_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// A zero Publisher never blocks: each method panics with a message naming
// NewPublisher. The calls run in a bubble, so a method that blocked forever
// would fail the test as a deadlock instead of hanging it.
func TestZeroPublisherNeverBlocks(t *testing.T) {
	calls := map[string]func(p *platform.Publisher){
		"Boot":  func(p *platform.Publisher) { _ = p.Boot() },
		"Start": func(p *platform.Publisher) { _ = p.Start(context.Background()) },
		"Run":   func(p *platform.Publisher) { _ = p.Run(context.Background()) },
		"Publish": func(p *platform.Publisher) {
			_, _ = p.Publish(context.Background(), 1, moduletest.Variant(0), kernel.SkewWarn)
		},
		"Render":  func(p *platform.Publisher) { _, _, _ = p.Render(context.Background(), kernel.Instance{}) },
		"Forget":  func(p *platform.Publisher) { p.Forget() },
		"Reclaim": func(p *platform.Publisher) { _ = p.Reclaim() },
		"Settle":  func(p *platform.Publisher) { _ = p.Settle(context.Background()) },
		"Stats":   func(p *platform.Publisher) { _ = p.Stats() },
		"Store":   func(p *platform.Publisher) { _ = p.Store() },
		"Layout":  func(p *platform.Publisher) { _ = p.Layout() },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				done := make(chan any)
				go func() {
					defer func() { done <- recover() }()
					call(&platform.Publisher{})
				}()
				got := <-done
				msg := fmt.Sprint(got)
				if got == nil || !strings.HasPrefix(msg, "platform: ") || !strings.Contains(msg, "NewPublisher") {
					t.Fatalf("zero Publisher's %s: recovered %v, want a panic naming the package and NewPublisher", name, got)
				}
			})
		})
	}
}

// One sentinel per meaning: an empty file set is dirlife's ErrNoFiles
// wherever it is refused.
func TestNoFilesIsOneSentinel(t *testing.T) {
	if platform.ErrNoFiles != dirlife.ErrNoFiles {
		t.Fatal("platform.ErrNoFiles is not dirlife.ErrNoFiles")
	}
	p := newBooted(t, platform.PublisherOptions{})
	_, err := p.Publish(context.Background(), 1, nil, kernel.SkewWarn)
	if !errors.Is(err, dirlife.ErrNoFiles) {
		t.Errorf("Publish of no files: %v, want errors.Is dirlife.ErrNoFiles", err)
	}
	_, err = p.Layout().Write(1, nil)
	if !errors.Is(err, dirlife.ErrNoFiles) {
		t.Errorf("Layout.Write of no files: %v, want errors.Is dirlife.ErrNoFiles", err)
	}
}

// StaleError unwraps to ErrStale, like its neighbours unwrap to theirs.
func TestStaleErrorUnwraps(t *testing.T) {
	err := &publish.StaleError[int64]{Key: 1, Current: 3}
	if got := errors.Unwrap(err); got != publish.ErrStale {
		t.Fatalf("errors.Unwrap(StaleError) = %v, want ErrStale", got)
	}
	for _, err := range []error{&platform.GenerationError{Generation: 0}, &platform.SkewPolicyError{}} {
		if errors.Unwrap(err) == nil {
			t.Errorf("%T does not unwrap to its sentinel", err)
		}
	}
}

// The zero Outcome is no outcome: it does not read as a failure.
func TestZeroOutcome(t *testing.T) {
	var o publish.Outcome
	if s := o.String(); s == publish.Failed.String() || s != "outcome(0)" {
		t.Fatalf("zero Outcome prints %q, want outcome(0)", s)
	}
	for _, o := range []publish.Outcome{publish.Failed, publish.Published, publish.Unchanged, publish.Changed, publish.BuildFailed, publish.Stale} {
		if o == 0 || strings.HasPrefix(o.String(), "outcome(") {
			t.Errorf("Outcome %d is zero or has no name: %q", int(o), o)
		}
	}
}

// Every error a Publish refusal returns begins with the package's prefix,
// once.
func TestPublishErrorPrefixes(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	if _, err := p.Publish(ctx, 5, moduletest.Variant(0), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	bad := moduletest.Variant(1)
	bad["/etc/passwd"] = nil
	cases := map[string]func() error{
		"generation 0": func() error { _, err := p.Publish(ctx, 0, moduletest.Variant(1), kernel.SkewWarn); return err },
		"no files":     func() error { _, err := p.Publish(ctx, 6, nil, kernel.SkewWarn); return err },
		"skew":         func() error { _, err := p.Publish(ctx, 6, moduletest.Variant(1), kernel.SkewPolicy(9)); return err },
		"stale":        func() error { _, err := p.Publish(ctx, 4, moduletest.Variant(1), kernel.SkewWarn); return err },
		"name":         func() error { _, err := p.Publish(ctx, 6, bad, kernel.SkewWarn); return err },
		"not booted": func() error {
			_, err := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{}).Publish(ctx, 1, moduletest.Variant(1), kernel.SkewWarn)
			return err
		},
	}
	for name, call := range cases {
		err := call()
		if err == nil || !strings.HasPrefix(err.Error(), "platform: ") || strings.HasPrefix(err.Error(), "platform: platform: ") {
			t.Errorf("%s: %v, want one leading \"platform: \"", name, err)
		}
	}
}
