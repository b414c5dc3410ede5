package platform_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/publish"
)

// OnPublish and OnReclaim run after the Publisher's serialisation is
// released: a callback may call back into the Publisher (a lock held
// around it would deadlock the bubble, which synctest reports).
func TestCallbacksRunOutsideLocks(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		var p *platform.Publisher
		var outcomes []publish.Outcome
		var reclaimed []int64
		var mu sync.Mutex
		files := moduletest.Variant(0)
		p = newBooted(t, platform.PublisherOptions{
			OnPublish: func(ev platform.PublishEvent) {
				mu.Lock()
				outcomes = append(outcomes, ev.Outcome)
				again := ev.Outcome == publish.Published && ev.Key == 2
				mu.Unlock()
				_ = p.Stats()
				if again {
					p.Publish(context.Background(), 2, files, 0) // re-entrant: unchanged
				}
			},
			OnReclaim: func(ev platform.ReclaimEvent) {
				mu.Lock()
				reclaimed = append(reclaimed, ev.Identity.Key)
				mu.Unlock()
				p.ReclaimNow() // re-entrant
			},
		})
		ctx := context.Background()
		if _, err := p.Publish(ctx, 1, files, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Publish(ctx, 2, files, 0); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []publish.Outcome{publish.Published, publish.Published, publish.Unchanged}
		if len(outcomes) != 3 || outcomes[0] != want[0] || outcomes[1] != want[1] || outcomes[2] != want[2] {
			t.Fatalf("outcomes %v, want %v (the re-entrant publish reports last)", outcomes, want)
		}
		if len(reclaimed) != 1 || reclaimed[0] != 1 {
			t.Fatalf("reclaimed %v, want [1]", reclaimed)
		}
	})
}

// The logger hears every publish and removal.
func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := newBooted(t, platform.PublisherOptions{Logger: log})
	ctx := context.Background()
	p.Publish(ctx, 1, moduletest.Variant(0), 0)
	p.Publish(ctx, 2, moduletest.Variant(1), 0)
	p.Publish(ctx, 1, moduletest.Variant(1), 0)
	for _, want := range []string{
		"outcome=published", "key=2", "identity=2@sha256:", "removed a directory",
		// A stale publish is expected: Info, in the words of the caller's error.
		`level=INFO msg="platform: generation 1 is older than the current generation 2: stale key" key=1 outcome=stale`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
	if strings.Contains(buf.String(), "level=ERROR") {
		t.Errorf("a log of no failure says ERROR:\n%s", buf.String())
	}
}
