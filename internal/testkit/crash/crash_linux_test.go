package crash_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"leasekit.dev/internal/testkit/crash"
)

// TestEndsBeforeKill: a child that reaches Ready but ends before the
// kill, by exit or by returning, fails the test.
func TestEndsBeforeKill(t *testing.T) {
	for _, c := range []struct{ test, want string }{
		{"TestChildExitsAfterReady", "exit status 3"},
		{"TestChildReturnsAfterReady", "exit status 0"},
	} {
		f := harness(func(t crash.TB) {
			p := crash.Start(t, c.test)
			// Kill only once the child has ended: wait for it, through
			// the process table, never by the clock.
			waitEnded(p)
			p.Kill(0)
		})
		if !strings.Contains(f, "before the kill") || !strings.Contains(f, c.want) {
			t.Errorf("child %s: the harness failed with %q, want an end before the kill and %q", c.test, f, c.want)
		}
	}
}

// TestCleanupKills: a child the test never kills is killed and reaped in
// the test's cleanup.
func TestCleanupKills(t *testing.T) {
	var pid int
	if f := harness(func(t crash.TB) { pid = crash.Pid(crash.Start(t, "TestChildLoops")) }); f != "" {
		t.Fatal(f)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the child %d is still there after the cleanup (signal 0: %v)", pid, err)
	}
}

// waitEnded returns once p's child has ended (a zombie, not yet reaped),
// as the process table says.
func waitEnded(p *crash.Process) {
	stat := fmt.Sprintf("/proc/%d/stat", crash.Pid(p))
	for {
		b, err := os.ReadFile(stat)
		// The state follows the command's closing parenthesis.
		if i := bytes.LastIndexByte(b, ')'); err != nil || i >= 0 && bytes.HasPrefix(b[i+1:], []byte(" Z")) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
