//go:build linux

package platform_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
)

// A superseded generation whose removal fails in the layout's background
// remover (here: a filesystem mounted inside it, which the layout never
// removes across) is noticed by the reclaim loop and retried with backoff
// until it goes, without another Publish. It needs the right to mount.
func TestRunRetriesBackgroundRemovalFailure(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var failures int
		p := newBooted(t, platform.PublisherOptions{
			RetryMin: time.Second, RetryMax: 4 * time.Second,
			OnReclaim: func(ev platform.ReclaimEvent) {
				if ev.Err != nil {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			},
		})
		root := p.Layout().Root
		ctx, stop := runWithGenerationMounted(t, p)

		if _, err := p.Publish(ctx, 2, moduletest.Variant(1), 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := p.Stats(); st.LastError == nil || !strings.Contains(st.LastError.Error(), "mnt") {
			t.Fatalf("after a background removal failed, Stats().LastError = %v, want the failure naming the mount", st.LastError)
		}
		time.Sleep(10 * time.Second) // retries at 1s, 3s, 7s: each fails
		synctest.Wait()
		mu.Lock()
		n := failures
		mu.Unlock()
		if n < 3 {
			t.Fatalf("OnReclaim saw %d failures after 10s of backoff from 1s, want at least 3", n)
		}

		unmountUnder(root)
		time.Sleep(4 * time.Second) // the capped backoff
		synctest.Wait()
		if gens := generations(t, p); !slices.Equal(gens, []int64{2}) {
			t.Fatalf("Generations() = %v, want [2]", gens)
		}
		if got := strayEntries(t, root); len(got) != 0 {
			t.Fatalf("after the retry, Root holds %v besides gen-2", got)
		}
		if st := p.Stats(); st.LastError != nil {
			t.Fatalf("after the retry succeeded, Stats().LastError = %v", st.LastError)
		}
		stop()
	})
}

// A generation that Forget removes itself, while Run runs, and whose
// removal then fails in the layout's background remover, is noticed by
// the reclaim loop and retried until it goes.
func TestRunRetriesBackgroundFailureOfForget(t *testing.T) {
	warmKernel(t)
	synctest.Test(t, func(t *testing.T) {
		p := newBooted(t, platform.PublisherOptions{RetryMin: time.Second, RetryMax: time.Second})
		root := p.Layout().Root
		_, stop := runWithGenerationMounted(t, p)

		p.Forget()
		synctest.Wait()
		if st := p.Stats(); st.LastError == nil || !strings.Contains(st.LastError.Error(), "mnt") {
			t.Fatalf("after the background removal of a forgotten generation failed, Stats().LastError = %v, want the failure naming the mount", st.LastError)
		}
		unmountUnder(root)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := strayEntries(t, root); len(got) != 0 || len(generations(t, p)) != 0 {
			t.Fatalf("after the retry, Root holds %v", dirtree.MustNames(t, root))
		}
		stop()
	})
}

// runWithGenerationMounted starts p.Run, publishes generation 1 and mounts
// a tmpfs inside its directory, so that its removal fails. stop ends Run
// and fails t on Run's error; Run also ends when the test does.
func runWithGenerationMounted(t *testing.T, p *platform.Publisher) (ctx context.Context, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	rec, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	mountTmpfsIn(t, rec.Dir, p.Layout().Root)
	return ctx, func() {
		t.Helper()
		cancel()
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
	}
}

// unmountUnder detaches every mount under root: a prune moves a mount
// along with the directory it is in.
func unmountUnder(root string) {
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for line := range strings.Lines(string(mounts)) {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], root+"/") {
			_ = syscall.Unmount(f[1], syscall.MNT_DETACH)
		}
	}
}

// mountTmpfsIn mounts a tmpfs at dir/mnt, so that removing dir fails, and
// unmounts everything under root when the test ends. It skips the test
// where mounting is not permitted.
func mountTmpfsIn(t *testing.T, dir, root string) {
	t.Helper()
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { unmountUnder(root) })
}
