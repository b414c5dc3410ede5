package publish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// The reclaim loop removes a replaced directory when its last lease is
// released, woken by the release (compared by directory: a change at the
// same key counts), with no Publish in between; it stops with its context.
func TestRunReclaimsOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		var reclaims []publish.ReclaimEvent[int64]
		p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{
			NoSync:    true,
			OnReclaim: func(ev publish.ReclaimEvent[int64]) { reclaims = append(reclaims, ev) },
		})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()

		old, err := p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := p.Slot().Lease()
		cur, err := p.Publish(ctx, 1, dirlife.Files{"a": []byte("2")}, 0)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := onDisk(t, root); !slices.Equal(got, []string{filepath.Base(old.Dir), filepath.Base(cur.Dir)}) {
			t.Fatalf("while leased, Root holds %v", got)
		}
		l.Release()
		synctest.Wait()
		if got := onDisk(t, root); !slices.Equal(got, []string{filepath.Base(cur.Dir)}) {
			t.Fatalf("after the last release, Root holds %v, want only %s", got, filepath.Base(cur.Dir))
		}
		if len(reclaims) != 1 || reclaims[0].Dir != old.Dir || reclaims[0].Err != nil {
			t.Fatalf("reclaims %+v, want %s removed", reclaims, old.Dir)
		}
		if _, err := os.Stat(cur.Dir); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatalf("Run = %v, want nil when its context ends", err)
		}
	})
}

// A failed removal does not fail a Publish: it shows in Stats, and the
// next removal pass retries it.
func TestFailedRemovalIsRetried(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	errDisk := errors.New("disk says no")
	fail := true
	p := newPublisher(t, root, publish.WithDisk(publish.Options[int64, dirlife.Digest, int]{NoSync: true},
		func(d publish.Disk) publish.Disk { return failingPrune{d, &fail, errDisk} }))
	ctx := context.Background()
	if _, err := p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 2, dirlife.Files{"a": []byte("2")}, 0); err != nil {
		t.Fatalf("a failed removal failed the publish: %v", err)
	}
	if st := p.Stats(); !errors.Is(st.LastError, errDisk) || len(st.Dirs) != 2 {
		t.Fatalf("after a failed removal: %+v", st)
	}
	fail = false
	p.Reclaim()
	if st := p.Stats(); st.LastError != nil || len(st.Dirs) != 1 || !slices.Equal(onDisk(t, root), []string{"gen-2"}) {
		t.Fatalf("after the retry: %+v, Root %v", st, onDisk(t, root))
	}
}

type failingPrune struct {
	publish.Disk
	fail *bool
	err  error
}

func (d failingPrune) Prune(keep ...string) error {
	if *d.fail {
		return d.err
	}
	return d.Disk.Prune(keep...)
}

// TestSettleLeavesNoGarbage: after Reclaim and Settle, Root holds the
// current directory only: no directory set aside for removal, no staging
// directory, although the layout removes in the background.
func TestSettleLeavesNoGarbage(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx := context.Background()
	var cur publish.Record[int64, dirlife.Digest, int]
	for key := range int64(6) {
		// Deep enough that a removal takes a while.
		files := dirlife.Files{"a": []byte{byte(key)}}
		for i := range 50 {
			files[strings.Repeat("d/", i%8)+"f"+string(rune('a'+i%26))+string(rune('a'+i/26))] = []byte("x")
		}
		var err error
		if cur, err = p.Publish(ctx, key+1, files, 0); err != nil {
			t.Fatal(err)
		}
	}
	p.Reclaim()
	if err := p.Settle(ctx); err != nil {
		t.Fatalf("Settle = %v", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != ".dirlife-root" && e.Name() != ".dirlife-lock" {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 || names[0] != filepath.Base(cur.Dir) {
		t.Fatalf("after Reclaim and Settle, Root holds %v, want only %s", names, filepath.Base(cur.Dir))
	}
}

// blockingDisk is a Disk whose background removals run until gate is
// closed.
type blockingDisk struct {
	publish.Disk
	gate chan struct{}
	err  error // what Settle returns once the gate is open
}

func (d blockingDisk) Settle(ctx context.Context) error {
	select {
	case <-d.gate:
		return d.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSettleWaits: Settle blocks while the background removals run,
// returns ctx.Err() when ctx ends first, then nil once they are over; a
// removal still running past its deadline is returned as the layout
// reports it, and reported to OnReclaim and Stats.
func TestSettleWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		disk := &blockingDisk{gate: gate}
		var reclaims []publish.ReclaimEvent[int64]
		p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.WithDisk(publish.Options[int64, dirlife.Digest, int]{
			NoSync:    true,
			OnReclaim: func(ev publish.ReclaimEvent[int64]) { reclaims = append(reclaims, ev) },
		}, func(d publish.Disk) publish.Disk { disk.Disk = d; return disk }))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := p.Settle(ctx); err != context.DeadlineExceeded || time.Since(start) != time.Minute {
			t.Fatalf("Settle = %v after %v, want ctx.Err() once ctx ends", err, time.Since(start))
		}
		if len(reclaims) != 0 {
			t.Fatalf("a Settle that ctx ended reported %+v", reclaims)
		}

		stalled := &dirlife.StalledError{Root: "root", Deadline: time.Second, Entries: []dirlife.StalledEntry{{Name: "gen-3", Aside: ".aside-1"}}}
		disk.err = stalled
		done := make(chan error, 1)
		go func() { done <- p.Settle(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Settle returned %v while the removals run", err)
		default:
		}
		close(gate)
		err := <-done
		if !errors.Is(err, stalled) {
			t.Fatalf("Settle = %v, want the layout's StalledError", err)
		}
		if len(reclaims) != 1 || reclaims[0].Identity.Key != 3 || !errors.Is(reclaims[0].Err, stalled) {
			t.Fatalf("reclaims %+v, want the stalled gen-3", reclaims)
		}
		if s := p.Stats(); s.StalledRemovals != 1 {
			t.Fatalf("Stats().StalledRemovals = %d, want 1", s.StalledRemovals)
		}
		disk.err = nil
		if err := p.Settle(context.Background()); err != nil {
			t.Fatalf("Settle once the removals are over = %v", err)
		}
	})
}
