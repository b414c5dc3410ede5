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

	"golang.org/x/sys/unix"
	"leasekit.dev/dirlife/internal/rootlock"
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

// inFlock returns the number of this process's threads blocked in
// flock(2), from /proc/self/task/*/syscall.
func inFlock(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	n := 0
	for _, task := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
		if err != nil {
			continue // the thread ended, or the file is not readable
		}
		if f := bytes.Fields(data); len(f) > 0 && string(f[0]) == strconv.Itoa(unix.SYS_FLOCK) {
			n++
		}
	}
	return n
}

// TestWaitersParkNoThreads: 200 Writes waiting behind a held exclusive
// lock, and 200 Prunes behind a held shared one, do not each park an OS
// thread in flock(2): at most one thread waits there, and the process's
// thread count stays far below the number of waiters. When the lock is
// released they all complete.
func TestWaitersParkNoThreads(t *testing.T) {
	const waiters = 200
	cases := []struct {
		name string
		held rootlock.Mode
		call func(l Layout[int64], i int) error
	}{
		{"writes behind a prune", rootlock.Exclusive, func(l Layout[int64], i int) error {
			_, err := l.Write(int64(i), Files{"f": []byte("x")})
			return err
		}},
		{"prunes behind a write", rootlock.Shared, func(l Layout[int64], i int) error { return l.Prune() }},
	}
	for _, c := range cases {
		for _, holder := range []string{"this process", "another process"} {
			t.Run(c.name+"/held by "+holder, func(t *testing.T) {
				l := genLayout(t)
				l.NoSync = true
				mustWrite(t, l, 0, Files{"f": nil})
				release := holdLock(t, l, c.held, holder == "another process")
				parkedOnly(t, l, waiters, release, c.call)
			})
		}
	}
}

// holdLock takes Root's lock in mode: through the layout, or as another
// process does, by flock on a descriptor of its own.
func holdLock(t *testing.T, l Layout[int64], mode rootlock.Mode, foreign bool) (release func()) {
	t.Helper()
	if !foreign {
		h, err := l.openRoot("test", false, mode)
		if err != nil {
			t.Fatal(err)
		}
		return h.release
	}
	d, err := os.Open(l.Root)
	if err != nil {
		t.Fatal(err)
	}
	how := unix.LOCK_SH
	if mode == rootlock.Exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(d.Fd()), how); err != nil {
		t.Fatal(err)
	}
	return func() { d.Close() }
}

// parkedOnly starts waiters calls of call on l while Root's lock is held,
// checks that they do not each take an OS thread, then releases the lock
// and checks that every call succeeds.
func parkedOnly(t *testing.T, l Layout[int64], waiters int, release func(), call func(Layout[int64], int) error) {
	t.Helper()
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
		wg.Go(func() { errs[i] = call(waiting, i+1) })
	}
	for arrived.Load() < int64(waiters) {
		time.Sleep(time.Millisecond)
	}
	peak, flocked := 0, 0
	for range 50 { // the waiters reach the lock; watch the threads
		peak = max(peak, threads(t))
		flocked = max(flocked, inFlock(t))
		time.Sleep(4 * time.Millisecond)
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("waiter %d: %v", i, err)
		}
	}
	if flocked > 1 {
		t.Fatalf("%d threads waited in flock at once, want at most 1", flocked)
	}
	// The waiters' short system calls before the lock may make the
	// runtime start a few threads, never one per waiter.
	if bound := before + waiters/4; peak > bound {
		t.Fatalf("%d waiters took the process from %d to %d threads, over %d", waiters, before, peak, bound)
	}
	t.Logf("%d waiters: threads %d before, %d at most while waiting, %d at most in flock", waiters, before, peak, flocked)
}
