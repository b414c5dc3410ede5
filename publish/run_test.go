package publish_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

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
