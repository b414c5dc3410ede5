package isolate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"pgregory.net/rapid"
)

// TestWorkersKilledFromOutside: a worker killed mid-render by SIGKILL
// from outside fails its call with a clear error; the Workers recover, as
// they do when an idle worker is killed; once they are closed, no
// goroutine, descriptor or child process is left.
func TestWorkersKilledFromOutside(t *testing.T) {
	p := moduletest.Build(t)
	ignore := goleak.IgnoreCurrent()
	fds := openFiles(t)
	ws := &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 8 << 30}
	k := ws
	ctx := context.Background()
	if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 1)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		go func() {
			for ws.Stats().Busy == 0 {
				time.Sleep(time.Millisecond)
			}
			for _, pid := range children(t) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}()
		_, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: bombInstance(spin)})
		var we *isolate.WorkerError
		if !errors.As(err, &we) || we.Op != "render" || we.Dir != "instance" || !strings.Contains(err.Error(), "signal: killed") {
			t.Fatalf("%v, want a *isolate.WorkerError saying the worker was killed", err)
		}
		t.Log(err)
		if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 2)); err != nil {
			t.Fatalf("after the kill: %v", err)
		}
	}
	// An idle worker killed: the next call gets a fresh one.
	for _, pid := range children(t) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for ws.Stats().Running > 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 2)); err != nil {
		t.Fatalf("after an idle worker's kill: %v", err)
	}
	if s := ws.Stats(); s.Crashed != 3 || s.Started != 4 || s.Restarts != 3 || s.Running != 1 {
		t.Fatalf("stats %+v", s)
	}
	ws.Close()
	if s := ws.Stats(); s.Running != 0 {
		t.Fatalf("after Close, stats %+v", s)
	}
	if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 1)); !errors.Is(err, isolate.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	if left := children(t); len(left) > 0 {
		t.Fatalf("child processes left: %v", left)
	}
	if now := openFiles(t); now != fds {
		t.Fatalf("%d descriptors open, %d before", now, fds)
	}
	goleak.VerifyNone(t, ignore)
}

// openFiles returns how many descriptors this process has open.
func openFiles(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// children returns the processes whose parent is this one, zombies
// included.
func children(t *testing.T) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll kills each process from outside, as the OOM killer does, and,
// with wait, waits until each has ended (a zombie, or reaped).
func killAll(t interface {
	Helper()
	Fatal(...any)
}, ps []isolate.Proc, wait bool) {
	t.Helper()
	for _, p := range ps {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		for wait && !p.Ended() {
			time.Sleep(time.Millisecond)
		}
	}
}

// warm renders through ws, n calls at once, until n workers are idle, and
// returns how many calls it made.
func warm(t testing.TB, ws *isolate.Workers, in kernel.RenderInput, n int) uint64 {
	t.Helper()
	var calls uint64
	for len(ws.Idle()) < n {
		errs := make(chan error, n)
		for range n {
			go func() {
				_, err := ws.Render(context.Background(), in)
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			calls++
		}
	}
	return calls
}

// TestWorkersIdleKilled: a call after idle workers were killed from
// outside (SIGKILL, the OOM killer's way) runs on a fresh worker and
// succeeds, whether it comes at once, while the processes may not have
// ended yet, or once they have (zombies, or reaped); each dead worker is
// counted crashed and replaced, however many of the pool's were killed.
func TestWorkersIdleKilled(t *testing.T) {
	p := moduletest.Build(t)
	ctx := context.Background()
	good := moduletest.Shop(p, "v1.0.0", 1)
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			ws := &isolate.Workers{Size: 1}
			t.Cleanup(func() { ws.Close() })
			if _, err := ws.Render(ctx, good); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				killAll(t, ws.Idle(), wait)
				if _, err := ws.Render(ctx, good); err != nil {
					t.Fatalf("call %d after its idle worker's kill: %v", i, err)
				}
			}
			if s := ws.Stats(); s.Crashed != 10 || s.Started != 11 || s.Restarts != 10 || s.Calls != 11 {
				t.Fatalf("stats %+v, want 10 crashed and replaced, 11 calls", s)
			}

			// Every worker of a pool killed idle, more of them than a
			// call tries fresh workers: the call passes over each.
			ws4 := &isolate.Workers{Size: 4}
			t.Cleanup(func() { ws4.Close() })
			calls := warm(t, ws4, good, 4)
			started := ws4.Stats().Started
			killAll(t, ws4.Idle(), wait)
			if _, err := ws4.Render(ctx, good); err != nil {
				t.Fatalf("a call after the kill of every idle worker: %v", err)
			}
			if s := ws4.Stats(); s.Crashed != 4 || s.Started != started+1 || s.Restarts != 1 || s.Calls != calls+1 {
				t.Fatalf("stats %+v, want the 4 killed counted crashed, and one fresh worker", s)
			}
		})
	}
}

// TestWorkersKills: any sequence of calls, one at a time or two at once,
// and of kills from outside of idle workers (waited for or not, each kill
// followed by a call) and of busy ones: a call whose worker was killed
// idle succeeds on a fresh one;
// a call whose worker is killed while it evaluates fails with a
// *WorkerError saying so, and the next call succeeds; after each step no
// worker is busy, the counters say what happened, and Close leaves no
// worker process running.
func TestWorkersKills(t *testing.T) {
	p := moduletest.Build(t)
	ctx := context.Background()
	good := moduletest.Shop(p, "v1.0.0", 1)
	rapid.Check(t, func(rt *rapid.T) {
		ws := &isolate.Workers{Size: 2, Timeout: time.Hour, Memory: 8 << 30}
		defer ws.Close()
		seen := map[isolate.Proc]bool{} // every worker process met
		killed := map[isolate.Proc]bool{}
		var calls uint64
		var busyKills, idleKills int
		call := func() {
			if _, err := ws.Render(ctx, good); err != nil {
				rt.Fatalf("a call: %v", err)
			}
			calls++
		}
		call()
		for range rapid.IntRange(1, 5).Draw(rt, "steps") {
			switch rapid.SampledFrom([]string{"call", "two calls", "kill idle", "kill busy"}).Draw(rt, "step") {
			case "call":
				call()
			case "two calls":
				errs := make(chan error, 2)
				for range 2 {
					go func() {
						_, err := ws.Render(ctx, good)
						errs <- err
					}()
				}
				for range 2 {
					if err := <-errs; err != nil {
						rt.Fatalf("a call of two at once: %v", err)
					}
					calls++
				}
			case "kill idle":
				var live []isolate.Proc
				for _, p := range ws.Idle() {
					if !killed[p] {
						live = append(live, p)
					}
				}
				if len(live) == 0 {
					continue
				}
				// Some of them, the last idle (the next call's) or not.
				ps := rapid.SliceOfNDistinct(rapid.SampledFrom(live), 1, len(live), func(p isolate.Proc) isolate.Proc { return p }).Draw(rt, "idle killed")
				for _, p := range ps {
					killed[p], seen[p] = true, true
				}
				idleKills += len(ps)
				killAll(rt, ps, rapid.Bool().Draw(rt, "wait"))
				call()
			case "kill busy":
				errc := make(chan error, 1)
				go func() {
					_, err := ws.Render(ctx, kernel.RenderInput{Platform: p, Instance: bombInstance(spin)})
					errc <- err
				}()
				var busy []isolate.Proc
				for len(busy) == 0 {
					select {
					case err := <-errc:
						rt.Fatalf("the bomb returned %v before it was killed", err)
					default:
					}
					busy = ws.Evaluating()
				}
				seen[busy[0]] = true
				killAll(rt, busy, false)
				busyKills++
				err := <-errc
				var we *isolate.WorkerError
				if !errors.As(err, &we) || we.Op != "render" || we.Dir != "instance" || !strings.Contains(err.Error(), "signal: killed") {
					rt.Fatalf("%v, want a *isolate.WorkerError saying the worker was killed", err)
				}
				call()
			}
			stillIdle := 0
			for _, p := range ws.Idle() {
				seen[p] = true
				if killed[p] {
					stillIdle++
				}
			}
			s := ws.Stats()
			if s.Busy != 0 || len(ws.Evaluating()) != 0 || s.Calls != calls || s.KilledTime+s.KilledMemory+s.Cancelled+s.Recycled != 0 ||
				s.Crashed != uint64(busyKills+idleKills-stillIdle) || s.Started-s.Restarts > uint64(s.Size) ||
				s.Restarts > uint64(busyKills+idleKills) {
				rt.Fatalf("stats %+v after %d calls, %d busy and %d idle workers killed (%d of them still idle)",
					s, calls, busyKills, idleKills, stillIdle)
			}
		}
		ws.Close()
		if s := ws.Stats(); s.Running != 0 {
			rt.Fatalf("after Close, stats %+v", s)
		}
		for p := range seen {
			if !p.Ended() {
				rt.Fatalf("a worker process still runs after Close")
			}
		}
	})
}
