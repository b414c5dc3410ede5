package demo

import (
	"context"
	"leasekit.dev/platform"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunKeepsPromises runs the operator's main job with a fixed seed: a
// dozen publishes, every outcome among them, renders on every generation,
// slow readers spanning publishes. It must end with no violation and no
// unexpected outcome, and with only the current generation on disk.
//
// It runs in a synctest bubble: the run's clock moves only when all its
// goroutines wait, so a slow machine cannot make a prompt reclaim look
// late. TestRunKeepsPromisesInRealTime runs it on the real clock.
func TestRunKeepsPromises(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { testRunKeepsPromises(t) })
}

func TestRunKeepsPromisesInRealTime(t *testing.T) { testRunKeepsPromises(t) }

func testRunKeepsPromises(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "platform")
	sum, err := Run(t.Context(), Config{
		Dir: dir, Generations: 12, Seed: 1, Renders: 6,
		PublishEvery: 20 * time.Millisecond, NoSync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	sum.WriteText(&text)
	t.Logf("summary:\n%s", text.String())
	if !sum.OK() {
		t.Fatalf("the run broke a promise:\n%s", text.String())
	}
	p := sum.Publishes
	if p.Total != 12 || p.Published < 3 || p.Unchanged < 1 || p.Changed < 1 || p.BuildFailed < 1 || p.Stale < 1 || p.Failed != 0 {
		t.Errorf("publishes %+v: want 12, with at least 3 published and one each unchanged, changed, build-failed and stale", p)
	}
	if len(sum.ExpectedFailures) != p.BuildFailed {
		t.Errorf("%d expected failures named for %d failed builds", len(sum.ExpectedFailures), p.BuildFailed)
	}
	for _, f := range sum.ExpectedFailures {
		if f.Breakage == "" || !strings.Contains(f.Error, "platform.cue:") {
			t.Errorf("expected failure %+v does not name the breakage and its position", f)
		}
	}
	if sum.Reclaimed < 1 {
		t.Error("no directory was reclaimed after its last lease, though slow readers held superseded generations")
	}
	if sum.RenderCounts.OK < 1 || sum.RenderLatency.Count == 0 {
		t.Errorf("renders %+v: none rendered", sum.RenderCounts)
	}
	if m := sum.RenderMemo; m.Misses < 1 || m.Hits+m.Misses > uint64(sum.RenderCounts.Total) || m.HitRate < 0 || m.HitRate > 1 {
		t.Errorf("render memo %+v for %d renders", m, sum.RenderCounts.Total)
	}
	if sum.MaxOutstandingLeases < 1 || sum.MaxOutstandingLeases > 6 {
		t.Errorf("max outstanding leases %d, want 1 to 6", sum.MaxOutstandingLeases)
	}
	gens := onDisk(t, dir)
	if len(gens) != 1 {
		t.Errorf("after the run, generation directories %v on disk, want only the current one", gens)
	}
}

func TestRunRefusesADirectoryItDoesNotOwn(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(precious, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(t.Context(), Config{Dir: dir, Generations: 1})
	if err == nil {
		t.Fatal("Run booted on a non-empty directory it never owned")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name the directory", err)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "mine" {
		t.Errorf("the directory's file is gone or changed: %q, %v", data, err)
	}
}

func TestRunNeedsAnEnd(t *testing.T) {
	if _, err := Run(t.Context(), Config{Dir: t.TempDir()}); err == nil {
		t.Error("Run with neither a duration nor a number of generations started")
	}
}

// TestRunStopsWhenCancelled cancels a run meant to last an hour after a
// second of it, in a synctest bubble.
func TestRunStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		dir := filepath.Join(t.TempDir(), "platform")
		time.AfterFunc(time.Second, cancel)
		sum, err := Run(ctx, Config{Dir: dir, Duration: time.Hour, Seed: 2, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		if !sum.Interrupted {
			t.Error("a cancelled run does not say it was interrupted")
		}
		if sum.Publishes.Total < 5 {
			t.Errorf("%d publishes in a second, publishing every 100ms", sum.Publishes.Total)
		}
		if sum.Violations != 0 || sum.RenderCounts.Failed != 0 || len(sum.Unexpected) != 0 {
			t.Errorf("a cancelled run reports violations %v, failed renders %v, unexpected %v",
				sum.ViolationDetails, sum.RenderFailures, sum.Unexpected)
		}
	})
}

// onDisk lists the generation directories under dir.
func onDisk(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "gen-") {
			names = append(names, e.Name())
		}
	}
	return slices.Clip(names)
}

// TestRunCatchesAPlantedViolation removes a leased directory behind the
// publisher's back during a run: the run must report it and fail.
func TestRunCatchesAPlantedViolation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(dir string) error
		kind   string
	}{
		{"removed", os.RemoveAll, ViolationLeasedMissing},
		{"modified", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "platform.cue"), []byte("package platform\n"), 0o644)
		}, ViolationLeasedChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var once sync.Once
			var tamperErr error
			sum, err := Run(t.Context(), Config{
				Dir: filepath.Join(t.TempDir(), "platform"), Generations: 10, Seed: 1, Renders: 2,
				PublishEvery: 30 * time.Millisecond, NoSync: true,
				afterLease: func(g platform.Generated) { once.Do(func() { tamperErr = tc.tamper(g.Dir) }) },
			})
			if err != nil || tamperErr != nil {
				t.Fatal(err, tamperErr)
			}
			if sum.OK() || sum.Violations == 0 {
				t.Fatalf("a %s leased directory went unnoticed: %+v", tc.name, sum)
			}
			// The tampering render's own release must see it; other
			// renders leasing the directory meanwhile may see it too.
			if !slices.ContainsFunc(sum.ViolationDetails, func(v Violation) bool { return v.Kind == tc.kind }) {
				t.Errorf("violations %v, want one of kind %s", sum.ViolationDetails, tc.kind)
			}
		})
	}
}
