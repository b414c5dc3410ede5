package platform_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
)

// TestRendersThroughWorkers: a Publisher whose Evaluator is Workers renders
// through them and reports them in Stats; a render killed past its time
// budget fails with the *isolate.BudgetError, is not memoized (the next
// render of it is killed again), and a good render afterwards succeeds
// and is memoized.
func TestRendersThroughWorkers(t *testing.T) {
	// The time budget is ten times what a cold worker of a
	// race-detecting test binary takes to build and render the good
	// instance on a loaded machine; the bomb never ends, and holds a few
	// hundred MiB at most by the time budget, far below the memory budget.
	ws := &isolate.Workers{Size: 1, Timeout: 10 * time.Second, Memory: 8 << 30}
	t.Cleanup(func() { ws.Close() })
	p := published(t, platform.PublisherOptions{Evaluator: ws})
	ctx := context.Background()

	bomb := renderInstance(t)
	// Ten billion steps in little memory: it never ends on any machine.
	bomb.Files["bomb.cue"] = []byte("package shop\nimport \"list\"\nr: list.Range(0, 100000, 1)\nx: [for i in r for j in r if i < 0 {i}]\n")
	for range 2 {
		_, _, err := p.Render(ctx, bomb)
		var be *isolate.BudgetError
		if !errors.As(err, &be) || be.Budget != "time" || !errors.Is(err, isolate.ErrBudget) {
			t.Fatalf("Render of the bomb: %v, want a *isolate.BudgetError for time", err)
		}
	}
	good := renderInstance(t)
	for range 2 {
		if out, _, err := p.Render(ctx, good); err != nil || len(out.Resources) == 0 {
			t.Fatalf("Render: %v, %d resources", err, len(out.Resources))
		}
	}
	s := p.Stats()
	if s.Workers.Size != 1 || s.Workers.KilledTime != 2 || s.Workers.Calls == 0 {
		t.Fatalf("Stats().Workers = %+v, want size 1, 2 killed past the time budget, calls answered", s.Workers)
	}
	if s.Memo.Hits != 1 || s.Memo.Misses != 3 {
		t.Fatalf("Stats().Memo = %+v, want 1 hit (the good render again) and 3 misses", s.Memo)
	}
}
