package platform_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
)

// Stats reports the current generation, the disk, the leases and the
// counters, and clears LastError after a success.
func TestStats(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	if st := p.Stats(); st.Current.Key != 0 || len(onDisk(st)) != 0 || len(leased(st)) != 0 || st.Publishes != 0 {
		t.Fatalf("fresh stats %+v", st)
	}
	p.Publish(ctx, 1, moduletest.Variant(0), 0)
	_, r1, _ := p.Store().Lease()
	_, r2, _ := p.Store().Lease()
	p.Publish(ctx, 2, moduletest.Variant(1), 0)
	_, r3, _ := p.Store().Lease()
	p.Publish(ctx, 2, moduletest.Variant(1), 0)
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
	p.Publish(ctx, 3, moduletest.Variant(2), 0)
	st = p.Stats()
	if st.LastError != nil || st.Reclaims != 3 || !slices.Equal(onDisk(st), []int64{3}) || len(leaseCounts(st)) != 0 {
		t.Fatalf("after releases, a reclaim and a publish: %+v", st)
	}
}
