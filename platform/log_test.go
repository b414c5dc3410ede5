package platform_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/publish"
)

// records is a slog.Handler that keeps every record.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.list = append(r.list, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// TestStalePublishLoggedInTheCallersWords: a stale publish is logged once,
// at Info, and its message is the text of the platform's error the
// caller gets (publish's StaleError, in the platform's prefix), not the
// generic publisher's.
func TestStalePublishLoggedInTheCallersWords(t *testing.T) {
	rec := &records{}
	p := newBooted(t, platform.PublisherOptions{Logger: slog.New(rec)})
	ctx := context.Background()
	if _, err := p.Publish(ctx, 5, moduletest.Variant(0), 0); err != nil {
		t.Fatal(err)
	}
	_, err := p.Publish(ctx, 4, moduletest.Variant(1), 0)
	if _, ok := errors.AsType[*publish.StaleError[int64]](err); !ok || !strings.HasPrefix(err.Error(), "platform: ") {
		t.Fatalf("Publish(4) = %v, want a *publish.StaleError[int64]", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var stale []slog.Record
	for _, r := range rec.list {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "outcome" && a.Value.String() == "stale" {
				stale = append(stale, r)
			}
			return true
		})
	}
	if len(stale) != 1 {
		t.Fatalf("%d records of the stale publish, want 1", len(stale))
	}
	if r := stale[0]; r.Level != slog.LevelInfo || r.Message != err.Error() {
		t.Fatalf("logged at %v: %q; want Info: %q", r.Level, r.Message, err.Error())
	}
}
