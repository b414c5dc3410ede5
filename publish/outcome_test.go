package publish_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"leasekit.dev/dirlife"

	"leasekit.dev/publish"
)

// The zero Outcome is no outcome: it never reads as one of the constants.
func TestZeroOutcome(t *testing.T) {
	var zero publish.Outcome
	for _, o := range []publish.Outcome{publish.Failed, publish.Published, publish.Unchanged, publish.Changed, publish.BuildFailed, publish.Stale} {
		if zero == o || zero.String() == o.String() {
			t.Errorf("the zero Outcome is %v (%d), want no outcome", o, int(o))
		}
	}
}

// A build error is a verdict on the content (BuildFailed, counted in
// FailedBuilds) unless it is ctx's own or Options.Refused says it is none:
// then the outcome is Failed and nothing is counted as a failed build.
// Either way the current record stays.
func TestBuildErrorOutcome(t *testing.T) {
	errLost := errors.New("the builder was lost")
	for _, tc := range []struct {
		name    string
		build   func(ctx context.Context, cancel context.CancelFunc) error
		refused func(error) bool
		want    publish.Outcome
	}{
		{"a verdict", func(context.Context, context.CancelFunc) error { return errBad }, nil, publish.BuildFailed},
		{"ctx ended during the build", func(ctx context.Context, cancel context.CancelFunc) error {
			cancel()
			return fmt.Errorf("parsing: %w", ctx.Err())
		}, nil, publish.Failed},
		{"a deadline that is not ctx's", func(context.Context, context.CancelFunc) error {
			return context.DeadlineExceeded
		}, nil, publish.BuildFailed},
		{"no verdict, as Refused says", func(context.Context, context.CancelFunc) error { return errLost },
			func(err error) bool { return !errors.Is(err, errLost) }, publish.Failed},
		{"a verdict, as Refused says", func(context.Context, context.CancelFunc) error { return errBad },
			func(err error) bool { return !errors.Is(err, errLost) }, publish.BuildFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var fail atomic.Bool
			step := func(ctx context.Context, dir string) (dirlife.Digest, error) {
				if fail.Load() {
					return dirlife.Digest{}, tc.build(ctx, cancel)
				}
				return build(ctx, dir)
			}
			var events []publish.PublishEvent[int64]
			p := publish.New(filepath.Join(t.TempDir(), "root"), genCodec, step, publish.Options[int64, dirlife.Digest, int]{
				NoSync: true, Refused: tc.refused,
				OnPublish: func(ev publish.PublishEvent[int64]) { events = append(events, ev) },
			})
			if err := p.Boot(); err != nil {
				t.Fatal(err)
			}
			rec, err := p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0)
			if err != nil {
				t.Fatal(err)
			}
			fail.Store(true)
			if _, err := p.Publish(ctx, 2, dirlife.Files{"a": []byte("2")}, 0); err == nil {
				t.Fatal("Publish with a failing build returned no error")
			}
			if ev := events[len(events)-1]; ev.Outcome != tc.want {
				t.Errorf("outcome %v (%v), want %v", ev.Outcome, ev.Err, tc.want)
			}
			wantCount := uint64(0)
			if tc.want == publish.BuildFailed {
				wantCount = 1
			}
			if st := p.Stats(); st.FailedBuilds != wantCount || st.Current != rec.Identity() {
				t.Errorf("stats: %d failed builds, current %v; want %d and %v", st.FailedBuilds, st.Current, wantCount, rec.Identity())
			}
		})
	}
}
