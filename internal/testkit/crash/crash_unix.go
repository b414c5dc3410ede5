//go:build unix

package crash

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

const (
	// envChild names, in a child's environment, the test it was started to run.
	envChild = "LEASEKIT_CRASH_CHILD"
	// readyFD is the child's descriptor of the pipe it says ready on.
	readyFD = 3
	ready   = "ready\n"
)

// TB is the part of a test that the harness fails and cleans up after:
// *testing.T, *testing.B and *rapid.T all have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// A Process is a running crash child, started by [Start].
type Process struct {
	t    TB
	test string
	cmd  *exec.Cmd
	out  *bytes.Buffer // the child's stdout and stderr, read once it has ended
	err  error         // what Wait returned, once ended
	done bool          // whether the child has been waited for
}

// Child skips t unless this process is a crash child started by [Start]
// to run t: the first call of every child test.
func Child(t interface {
	Helper()
	Name() string
	Skip(args ...any)
}) {
	t.Helper()
	if os.Getenv(envChild) != t.Name() {
		t.Skip("a crash child: run by its parent test")
	}
}

var readyOnce sync.Once

// Ready tells the parent that the child has reached its kill point; its
// Start returns. Later calls do nothing. It panics outside a crash child.
func Ready() {
	if os.Getenv(envChild) == "" {
		panic("crash: Ready outside a crash child")
	}
	readyOnce.Do(func() {
		f := os.NewFile(readyFD, "crash-ready")
		if _, err := f.WriteString(ready); err != nil {
			panic(fmt.Sprintf("crash: telling the parent ready: %v", err))
		}
	})
}

// Start runs the test binary again as a child that runs only the test
// named test, with env ("KEY=value" each) added to its environment, and
// returns once the child has called [Ready]. It blocks until then. It
// fails t, leaving no child behind, if the child ends before it calls
// Ready, and says how it ended and what it printed. A child the test
// has not killed when it ends is killed then, in t's cleanup.
func Start(t TB, test string, env ...string) *Process {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("crash: %v", err)
	}
	defer r.Close()
	p := &Process{t: t, test: test, out: new(bytes.Buffer)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	p.cmd.Env = append(append(os.Environ(), envChild+"="+test), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.ExtraFiles = []*os.File{w} // descriptor 3 in the child
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		t.Fatalf("crash: starting child %s: %v", test, err)
	}
	t.Cleanup(p.end)
	got := make([]byte, len(ready))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != ready {
		p.end()
		t.Fatalf("crash: child %s ended before it reached its kill point (Ready): %s\n%s", test, how(p.err), p.out)
	}
	return p
}

// end kills the child with SIGKILL, unless it has been waited for, and
// waits for it.
func (p *Process) end() {
	if p.done {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.err, p.done = p.cmd.Wait(), true
}

// Kill waits d, kills the child with SIGKILL and waits for it to end. It
// fails t if the child had ended on its own before the kill, and says
// how it ended and what it printed.
func (p *Process) Kill(d time.Duration) {
	p.t.Helper()
	time.Sleep(d)
	p.end()
	if exit, ok := errors.AsType[*exec.ExitError](p.err); !ok || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		p.t.Fatalf("crash: child %s ended with %s before the kill:\n%s", p.test, how(p.err), p.out)
	}
}

// how says how a child ended, given what Wait returned.
func how(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
