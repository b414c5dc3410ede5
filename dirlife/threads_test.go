//go:build linux

package dirlife

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// threads returns the number of OS threads of this process.
func threads(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// TestWaitersParkNoThreads: 200 Writes waiting behind a held exclusive
// lock, and 200 Prunes behind a held shared one, do not each park an OS
// thread in flock(2): the process's thread count stays bounded,
// independent of the number of waiters. When the lock is released they
// all complete.
func TestWaitersParkNoThreads(t *testing.T) {
	const waiters = 200
	for _, c := range []struct {
		name string
		held lockMode
		call func(l Layout[int64], i int) error
	}{
		{"writes behind a prune", exclusive, func(l Layout[int64], i int) error {
			_, err := l.Write(int64(i), Files{"f": []byte("x")})
			return err
		}},
		{"prunes behind a write", shared, func(l Layout[int64], i int) error { return l.Prune() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			l.NoSync = true
			mustWrite(t, l, 0, Files{"f": nil})
			h, err := l.openRoot("test", false, c.held)
			if err != nil {
				t.Fatal(err)
			}
			before := threads(t)

			// Each call reads Root's attribute once before it waits for
			// the lock: count them to know every waiter is on its way.
			var arrived atomic.Int64
			waiting := l
			waiting.faults = func(step, name string) error {
				if step == stepOwnerAttr {
					arrived.Add(1)
				}
				return nil
			}
			var wg sync.WaitGroup
			errs := make([]error, waiters)
			for i := range waiters {
				wg.Go(func() { errs[i] = c.call(waiting, i+1) })
			}
			for arrived.Load() < waiters {
				time.Sleep(time.Millisecond)
			}
			peak := 0
			for range 50 { // the waiters reach the lock; watch the threads
				peak = max(peak, threads(t))
				time.Sleep(4 * time.Millisecond)
			}
			h.release()
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("waiter %d: %v", i, err)
				}
			}
			// A bound independent of the waiters: the runtime's own
			// threads, one in flock, a few in other system calls.
			if bound := before + 16; peak > bound {
				t.Fatalf("%d waiters took the process from %d to %d threads, over %d", waiters, before, peak, bound)
			}
			t.Logf("%d waiters: threads %d before, %d at most while waiting", waiters, before, peak)
		})
	}
}
