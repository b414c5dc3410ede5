package demo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"leasekit.dev/platform"
)

// booted returns a booted publisher on a new directory, with no reclaim
// loop running (so nothing is reclaimed unless a test publishes), and a
// Checker of it.
func booted(t *testing.T, grace time.Duration) (*platform.Publisher, *Checker) {
	t.Helper()
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	if err := pub.Boot(); err != nil {
		t.Fatal(err)
	}
	return pub, NewChecker(pub.Layout(), pub.Store(), grace)
}

// publishStep publishes the stream's next generation step, telling check.
func publishStep(t *testing.T, pub *platform.Publisher, check *Checker, st Step) {
	t.Helper()
	check.Expect(st.Generation, st.Files)
	if _, err := pub.Publish(context.Background(), st.Generation, st.Files, st.Skew); err != nil {
		t.Fatalf("publishing generation %d: %v", st.Generation, err)
	}
	check.Settled(pub.Store().Generation(), time.Now())
}

// leaseOld publishes generation 1, leases it, then publishes generation 2,
// so generation 1 is superseded and leased. It returns the lease's hold and
// release.
func leaseOld(t *testing.T, pub *platform.Publisher, check *Checker) (platform.Generated, *Hold, func()) {
	t.Helper()
	s := NewStream(1)
	publishStep(t, pub, check, s.Next())
	g, release, ok := pub.Store().Lease()
	if !ok {
		t.Fatal("nothing to lease after a publish")
	}
	h := check.Acquire(g)
	publishStep(t, pub, check, s.Next())
	if _, err := os.Stat(g.Dir); err != nil {
		t.Fatalf("the publisher removed leased generation %d: %v", g.Generation, err)
	}
	return g, h, release
}

func wantViolations(t *testing.T, check *Checker, kinds ...string) {
	t.Helper()
	n, got := check.Violations()
	if n != len(kinds) || len(got) != len(kinds) {
		t.Fatalf("violations %d %v, want %v", n, got, kinds)
	}
	for i, k := range kinds {
		if got[i].Kind != k {
			t.Errorf("violation %d is %v, want kind %s", i, got[i], k)
		}
	}
}

func TestCheckerPassesAnHonestPublisher(t *testing.T) {
	pub, check := booted(t, time.Hour) // no stall of the machine is as long
	g, h, release := leaseOld(t, pub, check)
	h.Release(release)
	if _, err := check.Sweep(time.Now()); err != nil {
		t.Fatal(err)
	}
	wantViolations(t, check)
	if _, err := os.Stat(g.Dir); err != nil {
		t.Fatalf("the released generation's directory should still be there (no reclaim loop runs): %v", err)
	}
}

func TestCheckerCatchesALeasedDirectoryRemoved(t *testing.T) {
	pub, check := booted(t, time.Second)
	g, h, release := leaseOld(t, pub, check)
	if err := os.RemoveAll(g.Dir); err != nil { // behind the publisher's back
		t.Fatal(err)
	}
	h.Release(release)
	wantViolations(t, check, ViolationLeasedMissing)
}

func TestCheckerCatchesALeasedDirectoryChanged(t *testing.T) {
	pub, check := booted(t, time.Second)
	g, h, release := leaseOld(t, pub, check)
	f := filepath.Join(g.Dir, "platform.cue")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, append(data, "\n// edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Release(release)
	wantViolations(t, check, ViolationLeasedChanged)
}

func TestCheckerCatchesAFileAddedToALeasedDirectory(t *testing.T) {
	pub, check := booted(t, time.Second)
	g, h, release := leaseOld(t, pub, check)
	if err := os.WriteFile(filepath.Join(g.Dir, "extra.cue"), []byte("package platform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Release(release)
	wantViolations(t, check, ViolationLeasedChanged)
}

func TestCheckerCatchesUnpublishedContentAtLease(t *testing.T) {
	pub, check := booted(t, time.Second)
	st := NewStream(1).Next()
	check.Expect(st.Generation, st.Files)
	st.Files = Default().Files // published, but not what the Checker expects
	if _, err := pub.Publish(context.Background(), st.Generation, st.Files, st.Skew); err != nil {
		t.Fatal(err)
	}
	g, release, _ := pub.Store().Lease()
	check.Acquire(g).Release(release)
	wantViolations(t, check, ViolationUnpublished)
}

func TestCheckerCatchesALingeringDirectory(t *testing.T) {
	const grace = time.Second
	pub, check := booted(t, grace)
	g, h, release := leaseOld(t, pub, check)
	// The release is between before and after, however slow the machine.
	before := time.Now()
	h.Release(release)
	after := time.Now()
	// No reclaim loop runs: generation 1's directory stays.
	if _, err := check.Sweep(before.Add(grace / 2)); err != nil {
		t.Fatal(err)
	}
	wantViolations(t, check)
	idle, err := check.Sweep(after.Add(2 * grace))
	if err != nil {
		t.Fatal(err)
	}
	if idle != 1 {
		t.Errorf("Sweep found %d idle directories, want 1", idle)
	}
	check.Sweep(after.Add(3 * grace)) // reported once
	wantViolations(t, check, ViolationReclaimLate)
	if _, err := os.Stat(g.Dir); err != nil {
		t.Fatal(err)
	}
}

func TestCheckerWaitsForLeasesItDoesNotWatch(t *testing.T) {
	const grace = time.Second
	pub, check := booted(t, grace)
	s := NewStream(1)
	publishStep(t, pub, check, s.Next())
	_, release, _ := pub.Store().Lease() // a lease the Checker does not watch
	publishStep(t, pub, check, s.Next())
	t0 := time.Now()
	check.Sweep(t0.Add(10 * grace))
	wantViolations(t, check) // leased: not late, however long ago superseded
	release()
	check.Sweep(t0.Add(10*grace + grace/2))
	wantViolations(t, check) // seen leased at the last sweep: within grace
	check.Sweep(t0.Add(12 * grace))
	wantViolations(t, check, ViolationReclaimLate)
}

func TestCheckerCatchesAnUnknownDirectory(t *testing.T) {
	pub, check := booted(t, time.Second)
	publishStep(t, pub, check, NewStream(1).Next())
	if _, err := pub.Layout().Write(99, Default().Files); err != nil {
		t.Fatal(err)
	}
	check.Sweep(time.Now())
	check.Sweep(time.Now())
	wantViolations(t, check, ViolationUnknownDir)
}
