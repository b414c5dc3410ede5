package publish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// faultDisk is a Publisher's disk whose write, removal and wait for
// background removals a test may replace; nil runs the real one.
type faultDisk struct {
	publish.Disk
	mu     sync.Mutex
	write  func(name string, files dirlife.Files) (string, error)
	prune  func(keep ...string) error
	settle func(ctx context.Context) error
}

func (d *faultDisk) Write(name string, files dirlife.Files) (string, error) {
	d.mu.Lock()
	write := d.write
	d.mu.Unlock()
	if write != nil {
		return write(name, files)
	}
	return d.Disk.Write(name, files)
}

func (d *faultDisk) Prune(keep ...string) error {
	d.mu.Lock()
	prune := d.prune
	d.mu.Unlock()
	if prune != nil {
		return prune(keep...)
	}
	return d.Disk.Prune(keep...)
}

func (d *faultDisk) Settle(ctx context.Context) error {
	d.mu.Lock()
	settle := d.settle
	d.mu.Unlock()
	if settle != nil {
		return settle(ctx)
	}
	return d.Disk.Settle(ctx)
}

func (d *faultDisk) set(f func(d *faultDisk)) {
	d.mu.Lock()
	f(d)
	d.mu.Unlock()
}

// newFaulty returns a booted Publisher on a new Root whose disk the test
// controls.
func newFaulty(t fataler, root string, opts publish.Options[int64, dirlife.Digest, int]) (*testPublisher, *faultDisk) {
	t.Helper()
	disk := &faultDisk{}
	opts.NoSync = true
	p := newPublisher(t, root, publish.WithDisk(opts, func(d publish.Disk) publish.Disk { disk.Disk = d; return disk }))
	return p, disk
}

func content(n string) dirlife.Files { return dirlife.Files{"a": []byte(n)} }

// faultyWithOne returns newFaulty's Publisher on a new Root, and its Root,
// once key 1 is published with content("1"), and that publication's
// Record.
func faultyWithOne(t *testing.T) (string, *testPublisher, *faultDisk, publish.Record[int64, dirlife.Digest, int]) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	p, disk := newFaulty(t, root, publish.Options[int64, dirlife.Digest, int]{})
	rec, err := p.Publish(context.Background(), 1, content("1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return root, p, disk, rec
}

// A write that fails after it made the directory (one it published but
// could not sync) loses nothing: the new directory, of a new key or a
// changed content of the current one, is removed, and the current record
// and its directory stay as they were; the current directory is never
// written again.
func TestWriteFailingAfterPublication(t *testing.T) {
	root, p, disk, rec := faultyWithOne(t)
	ctx := context.Background()
	errSync := errors.New("sync failed after publication")
	var writes int
	disk.set(func(d *faultDisk) {
		d.write = func(name string, files dirlife.Files) (string, error) {
			writes++
			dir, err := d.Disk.Write(name, files)
			if err == nil && writes == 1 {
				err = errSync
			}
			return dir, err
		}
	})
	for _, key := range []int64{2, 1} {
		writes = 0
		if _, err := p.Publish(ctx, key, content("2"), 0); !errors.Is(err, errSync) {
			t.Fatalf("Publish(%d): %v, want the write's error", key, err)
		}
		if _, got, ok := p.Slot().Get(); !ok || got != rec {
			t.Fatalf("Publish(%d) failed: the slot holds %+v, %v", key, got, ok)
		}
		if err := p.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		if got := onDisk(t, root); !slices.Equal(got, []string{"gen-1"}) {
			t.Fatalf("Publish(%d) failed: Root holds %v, want [gen-1]", key, got)
		}
		if got, err := readTree(rec.Dir); err != nil || string(got["a"]) != "1" || len(got) != 1 {
			t.Fatalf("the current directory holds %v, %v", got, err)
		}
	}
	if writes != 1 {
		t.Fatalf("the failed change wrote %d times, want once: the current directory is never written", writes)
	}
}

// A write that fails leaving an entry under Root that is no directory of
// the Publisher's (a staging leftover) has it removed by the failed
// Publish's own removal pass, not left for a later one.
func TestFailedWriteLeftoverIsRemoved(t *testing.T) {
	root, p, disk, rec := faultyWithOne(t)
	ctx := context.Background()
	errDisk := errors.New("disk full")
	disk.set(func(d *faultDisk) {
		d.write = func(string, dirlife.Files) (string, error) {
			if err := os.Mkdir(filepath.Join(root, ".staging-leftover"), 0o755); err != nil {
				return "", err
			}
			return "", errDisk
		}
	})
	if _, err := p.Publish(ctx, 2, content("2"), 0); !errors.Is(err, errDisk) {
		t.Fatalf("Publish with a failing write: %v, want %v", err, errDisk)
	}
	if err := p.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".staging-leftover" {
			t.Fatal("after a failed write Root still holds its leftover")
		}
	}
	if _, got, _ := p.Slot().Get(); got != rec {
		t.Fatalf("the slot holds %+v, want %+v", got, rec)
	}
}

// A removal error beside directories removed in the same pass is
// reported, and the retry that succeeds clears it.
func TestPruneErrorBesideRemovedDirectoriesIsReported(t *testing.T) {
	var events []publish.ReclaimEvent[int64]
	p, disk := newFaulty(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{
		OnReclaim: func(ev publish.ReclaimEvent[int64]) { events = append(events, ev) },
	})
	ctx := context.Background()
	if _, err := p.Publish(ctx, 1, content("1"), 0); err != nil {
		t.Fatal(err)
	}
	errLeftover := errors.New("a staging leftover would not go")
	disk.set(func(d *faultDisk) {
		d.prune = func(keep ...string) error { return errors.Join(d.Disk.Prune(keep...), errLeftover) }
	})
	if _, err := p.Publish(ctx, 2, content("2"), 0); err != nil {
		t.Fatalf("a failed removal failed the publish: %v", err)
	}
	if len(events) != 2 || events[0].Identity.Key != 1 || events[0].Err != nil || !errors.Is(events[1].Err, errLeftover) {
		t.Fatalf("events %+v, want key 1 removed and the leftover's error", events)
	}
	if st := p.Stats(); !errors.Is(st.LastError, errLeftover) {
		t.Fatalf("Stats().LastError = %v", st.LastError)
	}
	disk.set(func(d *faultDisk) { d.prune = nil })
	if evs := p.Reclaim(); len(evs) != 0 {
		t.Fatalf("the retry reported %+v", evs)
	}
	if st := p.Stats(); st.LastError != nil {
		t.Fatalf("after a successful retry, Stats().LastError = %v", st.LastError)
	}
}

// A removal that keeps failing stays LastError: a removal that succeeds
// beside it in the same pass does not hide it, nor does an identical
// re-publish; the retry that succeeds clears it.
func TestLastErrorKeepsAFailingRemoval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "root")
		p, disk := newFaulty(t, root, publish.Options[int64, dirlife.Digest, int]{RetryMin: time.Second, RetryMax: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var leases []func()
		for key := int64(1); key <= 3; key++ {
			if _, err := p.Publish(ctx, key, content(string(rune('0'+key))), 0); err != nil {
				t.Fatal(err)
			}
			if key < 3 {
				l, _ := p.Slot().Lease()
				leases = append(leases, l.Release)
			}
		}
		// gen-1 will not go; gen-2 goes beside it.
		errDisk := errors.New("disk says no")
		stuck := true
		disk.set(func(d *faultDisk) {
			d.prune = func(keep ...string) error {
				d.mu.Lock()
				s := stuck
				d.mu.Unlock()
				if !s {
					return d.Disk.Prune(keep...)
				}
				return errors.Join(d.Disk.Prune(append(keep, "gen-1")...), errDisk)
			}
		})
		for _, release := range leases {
			release()
		}
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()
		synctest.Wait()
		if got := onDisk(t, root); !slices.Equal(got, []string{"gen-1", "gen-3"}) {
			t.Fatalf("Root holds %v, want [gen-1 gen-3]", got)
		}
		if st := p.Stats(); !errors.Is(st.LastError, errDisk) {
			t.Fatalf("after a pass that removed gen-2 and failed on gen-1, LastError = %v, want %v", st.LastError, errDisk)
		}
		if _, err := p.Publish(ctx, 3, content("3"), 0); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); !errors.Is(st.LastError, errDisk) {
			t.Fatalf("after an identical re-publish, LastError = %v, want the removal failure still retried", st.LastError)
		}
		disk.set(func(*faultDisk) { stuck = false })
		time.Sleep(time.Second)
		synctest.Wait()
		if st := p.Stats(); st.LastError != nil || len(st.Dirs) != 1 || st.Dirs[0].Name != "gen-3" {
			t.Fatalf("after the retry succeeded: LastError = %v, Dirs %+v", st.LastError, st.Dirs)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}

// A failed removal is retried with a wait that doubles up to its cap.
func TestRunRetriesFailedRemovalWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reclaimErrs atomic.Int64
		root := filepath.Join(t.TempDir(), "root")
		p, disk := newFaulty(t, root, publish.Options[int64, dirlife.Digest, int]{
			RetryMin: time.Second, RetryMax: 4 * time.Second,
			OnReclaim: func(ev publish.ReclaimEvent[int64]) {
				if ev.Err != nil {
					reclaimErrs.Add(1)
				}
			},
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := p.Publish(ctx, 1, content("1"), 0); err != nil {
			t.Fatal(err)
		}
		l, _ := p.Slot().Lease()
		if _, err := p.Publish(ctx, 2, content("2"), 0); err != nil {
			t.Fatal(err)
		}
		errDisk := errors.New("disk says no")
		start := time.Now()
		var attempts []time.Duration
		disk.set(func(d *faultDisk) {
			d.prune = func(keep ...string) error {
				attempts = append(attempts, time.Since(start))
				if len(attempts) <= 6 {
					return errDisk
				}
				return d.Disk.Prune(keep...)
			}
		})
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()
		synctest.Wait()
		attempts = attempts[:0] // Run's first pass found nothing to remove
		start = time.Now()
		l.Release()
		time.Sleep(time.Minute)
		synctest.Wait()
		want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 11 * time.Second, 15 * time.Second, 19 * time.Second}
		if !slices.Equal(attempts, want) {
			t.Fatalf("removal attempts at %v, want %v", attempts, want)
		}
		if got := onDisk(t, root); !slices.Equal(got, []string{"gen-2"}) {
			t.Fatalf("after the retries Root holds %v, want [gen-2]", got)
		}
		if n := reclaimErrs.Load(); n != 6 {
			t.Errorf("OnReclaim saw %d failures, want 6", n)
		}
		if st := p.Stats(); st.LastError != nil || st.Reclaims != 1 {
			t.Fatalf("stats after the successful retry: %+v", st)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}

// A removal that never returns (the wait for the layout's background
// removals blocks, as on a mount that stops answering) blocks no Publish,
// Forget or lease; it is reported, in Stats and to OnReclaim, once
// RemovalDeadline has passed, and again at each retry; and Run returns once
// its ctx ends, without waiting for it.
func TestStuckRemovalBlocksNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const deadline = 30 * time.Second
		var mu sync.Mutex
		var stalls []int64 // keys reported stuck
		root := filepath.Join(t.TempDir(), "root")
		p, disk := newFaulty(t, root, publish.Options[int64, dirlife.Digest, int]{
			RemovalDeadline: deadline, RetryMin: time.Second, RetryMax: time.Second,
			OnReclaim: func(ev publish.ReclaimEvent[int64]) {
				if errors.Is(ev.Err, dirlife.ErrRemovalStalled) {
					mu.Lock()
					stalls = append(stalls, ev.Identity.Key)
					mu.Unlock()
				}
			},
		})
		// gen-1's removal hangs: the wait for it returns only at the
		// deadline, naming it, or when ctx ends.
		var stuck atomic.Bool
		unstick := make(chan struct{})
		disk.set(func(d *faultDisk) {
			d.settle = func(ctx context.Context) error {
				if !stuck.Load() {
					return d.Disk.Settle(ctx)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-unstick:
					return d.Disk.Settle(ctx)
				case <-time.After(deadline):
					return &dirlife.StalledError{Root: root, Deadline: deadline, Entries: []dirlife.StalledEntry{{Name: "gen-1", Aside: ".aside-8000000000000001"}}}
				}
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()
		if _, err := p.Publish(ctx, 1, content("1"), 0); err != nil {
			t.Fatal(err)
		}
		stuck.Store(true)
		if _, err := p.Publish(ctx, 2, content("2"), 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // Run removed gen-1 from its path and waits for its removal
		start := time.Now()

		// Everything else goes on, with no time passing.
		l, ok := p.Slot().Lease()
		if !ok || l.Value().Key != 2 {
			t.Fatalf("Lease() = %v, want key 2", ok)
		}
		if _, err := p.Publish(ctx, 3, content("3"), 0); err != nil {
			t.Fatal(err)
		}
		l.Release() // gen-2's last lease: Run reclaims it
		synctest.Wait()
		if got := onDisk(t, root); !slices.Equal(got, []string{"gen-3"}) {
			t.Fatalf("Root holds %v while gen-1's removal hangs, want [gen-3]", got)
		}
		p.Forget()
		if got := onDisk(t, root); len(got) != 0 {
			t.Fatalf("Root holds %v after Forget, want nothing", got)
		}
		if _, err := p.Publish(ctx, 4, content("4"), 0); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("the calls took %v of fake time while a removal hung, want none", time.Since(start))
		}
		if st := p.Stats(); st.StalledRemovals != 0 {
			t.Fatalf("Stats().StalledRemovals = %d before the deadline, want 0", st.StalledRemovals)
		}

		time.Sleep(deadline)
		synctest.Wait()
		st := p.Stats()
		if st.StalledRemovals != 1 || !errors.Is(st.LastError, dirlife.ErrRemovalStalled) || !strings.Contains(st.LastError.Error(), "gen-1") {
			t.Fatalf("after the deadline, Stats() = %d stalled, LastError %v; want 1, naming gen-1", st.StalledRemovals, st.LastError)
		}
		mu.Lock()
		got := slices.Clone(stalls)
		mu.Unlock()
		if !slices.Equal(got, []int64{1}) {
			t.Fatalf("OnReclaim saw stalls of %v, want [1]", got)
		}
		time.Sleep(time.Second + deadline) // the retry, and its deadline
		synctest.Wait()
		mu.Lock()
		n := len(stalls)
		mu.Unlock()
		if n < 2 {
			t.Fatalf("OnReclaim saw %d stalls after a retry, want at least 2", n)
		}

		// Run returns at once when its ctx ends, the removal still stuck.
		cancel()
		synctest.Wait()
		select {
		case err := <-ran:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Run did not return once its ctx ended while a removal hung")
		}

		// Once the removal returns, the next Run reports nothing stuck.
		close(unstick)
		stuck.Store(false)
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() { ran <- p.Run(ctx2) }()
		synctest.Wait()
		if st := p.Stats(); st.StalledRemovals != 0 {
			t.Fatalf("Stats().StalledRemovals = %d once the removal returned, want 0", st.StalledRemovals)
		}
		cancel2()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}

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
