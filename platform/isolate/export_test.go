package isolate

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"
)

// GarbageEnv, set in a worker's environment, makes MainGarbage serve it: it
// says hello, reads and acknowledges one request and answers with a frame
// that is not one the pool can read, then stays alive without a word more:
// "{not json", or, when the variable is "output", a render output in
// binary that claims more resources than its bytes hold.
const GarbageEnv = "ISOLATE_TEST_GARBAGE"

// SlowMemoryExitEnv, set in a worker's environment, makes MainGarbage
// serve it as a worker past its memory budget whose exit is slow: it says
// hello, reads and acknowledges one request, closes its output, and exits
// as a worker past its budget does only after the value of the variable, a
// duration.
const SlowMemoryExitEnv = "ISOLATE_TEST_SLOW_MEMORY_EXIT"

// NoAckEnv, set in a worker's environment, makes MainGarbage serve it as a
// worker that ends before it acknowledges a request: it says hello, reads
// one request, and exits with status 3.
const NoAckEnv = "ISOLATE_TEST_NO_ACK"

// MainGarbage is Main for a worker started with GarbageEnv,
// SlowMemoryExitEnv or NoAckEnv set.
func MainGarbage() {
	if _, ok := os.LookupEnv(workerEnv); !ok {
		return
	}
	slow, err := time.ParseDuration(os.Getenv(SlowMemoryExitEnv))
	if os.Getenv(GarbageEnv) == "" && os.Getenv(NoAckEnv) == "" && err != nil {
		return
	}
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	w.WriteString(workerHello)
	w.Flush()
	if _, err := readPayload(r, 1<<30); err != nil {
		os.Exit(1)
	}
	if os.Getenv(NoAckEnv) != "" {
		os.Exit(3)
	}
	w.WriteByte(workerAck)
	w.Flush()
	if err == nil {
		os.Stdout.Close()
		time.Sleep(slow)
		os.Exit(exitMemory)
	}
	garbage := []byte("{not json")
	if os.Getenv(GarbageEnv) == "output" {
		garbage = []byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	}
	writePayload(w, garbage)
	w.Flush()
	select {}
}

// A Proc is a worker process of a Workers, for a test to kill from outside.
type Proc struct{ w *worker }

// Idle returns the idle workers of ws, those killed since included, most
// recently used last.
func (ws *Workers) Idle() []Proc {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var ps []Proc
	for _, w := range ws.idle {
		ps = append(ps, Proc{w})
	}
	return ps
}

// Evaluating returns the workers that have acknowledged a call's request
// and whose call has not returned.
func (ws *Workers) Evaluating() []Proc {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var ps []Proc
	for w := range ws.all {
		if w.phase.Load() == phaseEvaluating {
			ps = append(ps, Proc{w})
		}
	}
	return ps
}

// Kill kills the process, as the OOM killer does: from outside, unknown
// to the pool.
func (p Proc) Kill() error { return p.w.cmd.Process.Signal(os.Kill) }

// Ended reports whether the process has ended: reaped, or a zombie
// (where /proc tells).
func (p Proc) Ended() bool {
	select {
	case <-p.w.exited:
		return true
	default:
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.w.cmd.Process.Pid) + "/stat")
	if err != nil {
		// Gone from /proc: reaped since exited was looked at.
		return os.IsNotExist(err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	rest := data[bytes.LastIndexByte(data, ')')+1:]
	return bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}
