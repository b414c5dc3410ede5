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
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/kernel/isolate"
)

// TestWorkersKilledFromOutside: a worker killed mid-render by SIGKILL
// from outside fails its call with a clear error; the Workers recover, as
// they do when an idle worker is killed; once they are closed, no
// goroutine, descriptor or child process is left.
func TestWorkersKilledFromOutside(t *testing.T) {
	p := build(t)
	ignore := goleak.IgnoreCurrent()
	fds := openFiles(t)
	ws := &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 8 << 30}
	k := ws
	ctx := context.Background()
	if _, err := k.Render(ctx, shop(p, "v1.0.0", 1)); err != nil {
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
		if _, err := k.Render(ctx, shop(p, "v1.0.0", 2)); err != nil {
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
	if _, err := k.Render(ctx, shop(p, "v1.0.0", 2)); err != nil {
		t.Fatalf("after an idle worker's kill: %v", err)
	}
	if s := ws.Stats(); s.Crashed != 3 || s.Started != 4 || s.Restarts != 3 || s.Running != 1 {
		t.Fatalf("stats %+v", s)
	}
	ws.Close()
	if s := ws.Stats(); s.Running != 0 {
		t.Fatalf("after Close, stats %+v", s)
	}
	if _, err := k.Render(ctx, shop(p, "v1.0.0", 1)); !errors.Is(err, isolate.ErrClosed) {
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
