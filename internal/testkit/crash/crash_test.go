//go:build unix

package crash_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"leasekit.dev/internal/testkit/crash"
)

// recorder is a TB that records the first failure and ends the goroutine
// that failed, as testing.T's Fatalf does, and runs its cleanups, last
// first, once the harness's goroutine has ended.
type recorder struct {
	failure  string
	cleanups []func()
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (*recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// harness runs f against a recorder on a goroutine of its own and returns
// the failure it recorded, "" for none.
func harness(f func(crash.TB)) string {
	r := new(recorder)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.failure
}

// The children the tests below start, each skipped when run directly.

func TestChildLoops(t *testing.T) {
	crash.Child(t)
	crash.Ready()
	crash.Ready() // a second call does nothing
	for {
		time.Sleep(time.Millisecond)
	}
}

func TestChildReturnsBeforeReady(t *testing.T) {
	crash.Child(t)
	fmt.Println("child output before the end")
}

func TestChildFailsBeforeReady(t *testing.T) {
	crash.Child(t)
	t.Fatal("the child's own failure")
}

func TestChildSkipsBeforeReady(t *testing.T) {
	crash.Child(t)
	t.Skip("the child skipped")
}

func TestChildExitsAfterReady(t *testing.T) {
	crash.Child(t)
	crash.Ready()
	os.Exit(3)
}

func TestChildReturnsAfterReady(t *testing.T) {
	crash.Child(t)
	crash.Ready()
}

// TestKill: a child that reaches Ready and runs on is killed and the
// harness reports nothing.
func TestKill(t *testing.T) {
	if f := harness(func(t crash.TB) { crash.Start(t, "TestChildLoops").Kill(time.Millisecond) }); f != "" {
		t.Fatalf("a child killed at its kill point failed the test: %s", f)
	}
}

// TestNeverReady: a child that ends before its kill point, or a kill
// point in no test, fails the test, saying so and showing what the child
// printed.
func TestNeverReady(t *testing.T) {
	for _, c := range []struct{ test, want string }{
		{"TestChildReturnsBeforeReady", "child output before the end"},
		{"TestChildFailsBeforeReady", "the child's own failure"},
		{"TestChildSkipsBeforeReady", "the child skipped"},
		{"TestNoSuchChild", "no tests to run"},
		{"", "ended before it reached its kill point"},
	} {
		f := harness(func(t crash.TB) {
			crash.Start(t, c.test).Kill(0)
			t.Fatalf("Start returned")
		})
		if !strings.Contains(f, "ended before it reached its kill point") || !strings.Contains(f, c.want) {
			t.Errorf("child %q: the harness failed with %q, want the kill point missed and %q", c.test, f, c.want)
		}
	}
}

// TestChildSkipsOutsideStart: a child test run directly skips.
func TestChildSkipsOutsideStart(t *testing.T) {
	ran := false
	t.Run("child", func(t *testing.T) {
		defer func() { ran = !t.Skipped() }()
		crash.Child(t)
	})
	if ran {
		t.Fatal("Child did not skip a test run outside Start")
	}
}
