package publish_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.records = append(r.records, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records whose "outcome" attribute is outcome.
func (r *recorder) find(outcome string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.records {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "outcome" && a.Value.String() == outcome {
				out = append(out, rec)
				return false
			}
			return true
		})
	}
	return out
}

// wordedError is an error in a caller's own words, wrapping the
// Publisher's.
type wordedError struct{ err error }

func (e *wordedError) Error() string { return "shop: " + e.err.Error() }
func (e *wordedError) Unwrap() error { return e.err }

// TestStalePublishLog: a stale publish, an expected event, is logged once
// at Info, not Error, and its message is the text of the error the caller
// gets, also when MapError words it.
func TestStalePublishLog(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(fmt.Sprintf("MapError=%v", mapped), func(t *testing.T) {
			rec := &recorder{}
			opts := publish.Options[int64, dirlife.Digest, int]{NoSync: true, Logger: slog.New(rec)}
			if mapped {
				opts.MapError = func(err error) error { return &wordedError{err} }
			}
			var evErr error
			opts.OnPublish = func(ev publish.PublishEvent[int64]) { evErr = ev.Err }
			p := newPublisher(t, filepath.Join(t.TempDir(), "root"), opts)
			ctx := context.Background()
			if _, err := p.Publish(ctx, 5, dirlife.Files{"a": []byte("5")}, 0); err != nil {
				t.Fatal(err)
			}
			_, err := p.Publish(ctx, 3, dirlife.Files{"a": []byte("3")}, 0)
			if !errors.Is(err, publish.ErrStale) {
				t.Fatalf("Publish(3) = %v, want a stale refusal", err)
			}
			if _, ok := errors.AsType[*wordedError](err); ok != mapped {
				t.Fatalf("Publish(3) = %T, MapError set: %v", err, mapped)
			}
			if evErr == nil || evErr.Error() != err.Error() {
				t.Fatalf("OnPublish saw %v, the caller got %v", evErr, err)
			}
			logged := rec.find("stale")
			if len(logged) != 1 {
				t.Fatalf("%d records of the stale publish, want 1", len(logged))
			}
			if l := logged[0]; l.Level != slog.LevelInfo || l.Message != err.Error() {
				t.Fatalf("logged at %v: %q; want Info: %q, the caller's error", l.Level, l.Message, err.Error())
			}
		})
	}
}
