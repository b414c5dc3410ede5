package platform_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/platform"
)

// Stats reports the current generation, the disk, the leases and the
// counters, and clears LastError after a success.
func TestStats(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	if st := p.Stats(); st.Current.Key != 0 || len(onDisk(st)) != 0 || len(leased(st)) != 0 || st.Publishes != 0 {
		t.Fatalf("fresh stats %+v", st)
	}
	p.Publish(ctx, 1, moduleFiles(t, 0), 0)
	_, r1, _ := p.Store().Lease()
	_, r2, _ := p.Store().Lease()
	p.Publish(ctx, 2, moduleFiles(t, 1), 0)
	_, r3, _ := p.Store().Lease()
	p.Publish(ctx, 2, moduleFiles(t, 1), 0)
	p.Publish(ctx, 3, brokenFiles(t, true), 0)

	st := p.Stats()
	if st.Current.Key != 2 || !slices.Equal(onDisk(st), []int64{1, 2}) || !slices.Equal(leased(st), []int64{1, 2}) ||
		!maps.Equal(leaseCounts(st), map[int64]int{1: 2, 2: 1}) {
		t.Fatalf("stats %+v", st)
	}
	if st.Publishes != 2 || st.Unchanged != 1 || st.FailedBuilds != 1 || st.Reclaims != 1 || st.LastError == nil {
		t.Fatalf("counters %+v: want 2 publishes, 1 unchanged, 1 failed build, 1 prune (the failed directory), an error", st)
	}
	if st.LastPublish.Write == 0 || st.LastPublish.Build == 0 {
		t.Fatalf("LastPublish %+v: the failed build wrote and built", st.LastPublish)
	}
	r1()
	r2()
	r3()
	p.ReclaimNow()
	p.Publish(ctx, 3, moduleFiles(t, 2), 0)
	st = p.Stats()
	if st.LastError != nil || st.Reclaims != 3 || !slices.Equal(onDisk(st), []int64{3}) || len(leaseCounts(st)) != 0 {
		t.Fatalf("after releases, a reclaim and a publish: %+v", st)
	}
}

// Stats().LastError keeps a removal failure while it lasts: a removal
// beside it in the same pass does not hide it, nor does an identical
// re-publish; the retry that succeeds clears it.
func TestLastErrorKeepsAFailingRemoval(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p := newBooted(t, platform.PublisherOptions{RetryMin: time.Second, RetryMax: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var releases []func()
		for gen := int64(1); gen <= 3; gen++ {
			if _, err := p.Publish(ctx, gen, moduleFiles(t, int(gen)), 0); err != nil {
				t.Fatal(err)
			}
			if gen < 3 {
				_, release, _ := p.Store().Lease()
				releases = append(releases, release)
			}
		}
		// Generation 1 will not go; generation 2 goes beside it.
		errDisk := errors.New("disk says no")
		var mu sync.Mutex
		stuck := true
		prune := p.DiskPrune
		p.SetPrune(func(keep ...string) error {
			mu.Lock()
			defer mu.Unlock()
			if !stuck {
				return prune(keep...)
			}
			return errors.Join(prune(append(keep, "gen-1")...), errDisk)
		})
		for _, release := range releases {
			release()
		}
		ran := make(chan error, 1)
		go func() { ran <- p.Run(ctx) }()
		synctest.Wait()
		if g := generations(t, p); !slices.Equal(g, []int64{1, 3}) {
			t.Fatalf("Generations() = %v, want [1 3]", g)
		}
		if st := p.Stats(); !errors.Is(st.LastError, errDisk) {
			t.Fatalf("after a pass that removed 2 and failed on 1, LastError = %v, want %v", st.LastError, errDisk)
		}
		if _, err := p.Publish(ctx, 3, moduleFiles(t, 3), 0); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); !errors.Is(st.LastError, errDisk) {
			t.Fatalf("after an identical re-publish, LastError = %v, want the removal failure still retried", st.LastError)
		}
		mu.Lock()
		stuck = false
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		if st := p.Stats(); st.LastError != nil || !slices.Equal(onDisk(st), []int64{3}) {
			t.Fatalf("after the retry succeeded: LastError = %v, OnDisk %v", st.LastError, onDisk(st))
		}
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	})
}
