package isolate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/platform/kernel"
)

// The default budgets and sizes of Workers; see Workers.
const (
	DefaultTimeout = 10 * time.Second
	DefaultMemory  = 512 << 20
	defaultCalls   = 1000

	// MinMemory is the least memory budget a worker may have: a
	// worker's runtime and CUE hold about 20 MiB before their first call.
	MinMemory = 32 << 20
)

// Workers is a pool of worker processes that runs the CUE evaluation of
// a [kernel.Kernel]'s builds and renders, so that the evaluation can be
// stopped: CUE's evaluator cannot be cancelled, but a process can be
// killed. Workers offer the Kernel's three verbs, BuildPlatform,
// ReadInstance and Render, with its results and errors. A call gets a
// worker of its own for its duration; when ctx ends, or the call is past a
// budget, the worker is killed and the call returns at once, ctx.Err() or
// a [*BudgetError]; the next call gets another worker. A worker otherwise
// stays warm for further calls, up to Calls of them.
//
// A worker acknowledges a call's request once it has read it whole,
// before it evaluates anything. A worker that ends after its
// acknowledgement is the call's own failure: a [*BudgetError] if it ended
// past its memory budget, a [*WorkerError] otherwise. One that ends
// before, however soon before the call (killed while idle, as the OOM
// killer does, whether or not its end is known yet), never started the
// call: it is replaced, and the call goes to another worker, warm or
// fresh, as long as ctx allows. A call tries at most three fresh workers,
// and Size+3 in all: when the last it may try ends before its
// acknowledgement too, the call fails as if it had ended after.
//
// A worker is the running executable started again, whose main function
// (or TestMain) calls [Main] first. It reads the platform's
// directory itself, through the same rules and Limits as the Kernel does
// in-process; the instance it renders is read by the caller and sent to
// it. Its results and errors are those the Kernel gives in-process.
//
// The zero value is ready to use, with the defaults; set the fields before
// first use. A field out of range (a negative one, or a Memory below
// MinMemory) fails every call with an error naming it, before any worker
// starts. Workers are safe for concurrent use by multiple goroutines.
// Close them when done: Close stops every worker process.
//
// The time budget is kept by the caller's process. The memory budget is
// kept by the worker's runtime (see [runtime/debug.SetMemoryLimit]), which
// collects harder near it, by the worker watching its own memory, and on
// Linux by RLIMIT_DATA well above the budget and by the caller's process
// watching the worker's resident memory (/proc/<pid>/statm); elsewhere the
// worker's own watch keeps it, which sees the Go runtime's memory only.
type Workers struct {
	// Kernel is the kernel whose evaluation the workers run, with its
	// Limits; nil: kernel.New().
	Kernel *kernel.Kernel

	// Size is the most workers at once, and so the most calls evaluating
	// at once: a call past it waits for a worker as long as its ctx allows.
	// Zero means runtime.GOMAXPROCS(0).
	Size int

	// Timeout is the time budget of one call, from when a worker has its
	// request until the worker answers (a call that goes to another
	// worker has it anew). Zero means DefaultTimeout.
	Timeout time.Duration

	// Memory is the memory budget of one worker, in bytes: the most
	// memory it may hold while it evaluates. Zero means
	// DefaultMemory; a budget below MinMemory is refused.
	Memory int64

	// Calls is how many calls a worker answers before it is replaced by a
	// fresh one. Zero means 1,000.
	Calls int

	mu      sync.Mutex
	slots   chan struct{} // one token per worker that may run; made on first use
	idle    []*worker     // warm workers, most recently used last
	all     map[*worker]bool
	closed  bool
	pending int            // workers that ended while open, not yet replaced
	reaped  sync.WaitGroup // one for each worker process until it is reaped
	exe     string         // the executable; found on first use
	exeErr  error
	stats   workerCounters
}

// workerCounters are the counters of Stats.
type workerCounters struct {
	started, restarts, calls, killedTime, killedMemory, cancelled, crashed, recycled atomic.Uint64
	busy                                                                             atomic.Int64
}

// Stats is a snapshot of Workers for metrics.
type Stats struct {
	Size    int // the most workers at once
	Running int // worker processes running, idle or busy
	Busy    int // workers evaluating a call: from their acknowledgement of its request until it returns

	Started  uint64 // worker processes started
	Restarts uint64 // of those, started in place of one that ended: killed, crashed or recycled
	Calls    uint64 // calls a worker answered

	KilledTime   uint64 // workers killed past the time budget
	KilledMemory uint64 // workers killed, or ended, past the memory budget
	Cancelled    uint64 // workers killed because their call's ctx ended
	Crashed      uint64 // workers that ended on their own (idle, or before they answered), or answered in frames the pool could not read
	Recycled     uint64 // workers retired after Calls calls
}

// resolved returns the configuration with its defaults, or an error
// naming a field out of range.
func (ws *Workers) resolved() (size int, timeout time.Duration, memory int64, calls int, err error) {
	size, timeout, memory, calls = ws.Size, ws.Timeout, ws.Memory, ws.Calls
	switch {
	case size < 0:
		return 0, 0, 0, 0, fmt.Errorf("isolate: Workers.Size is %d: must be positive, or zero for GOMAXPROCS", size)
	case timeout < 0:
		return 0, 0, 0, 0, fmt.Errorf("isolate: Workers.Timeout is %v: must be positive, or zero for the default", timeout)
	case memory < 0 || (memory > 0 && memory < MinMemory):
		return 0, 0, 0, 0, fmt.Errorf("isolate: Workers.Memory is %d bytes: must be at least %s, or zero for the default", memory, formatBytes(MinMemory))
	case calls < 0:
		return 0, 0, 0, 0, fmt.Errorf("isolate: Workers.Calls is %d: must be positive, or zero for the default", calls)
	}
	if size == 0 {
		size = runtime.GOMAXPROCS(0)
	}
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if memory == 0 {
		memory = DefaultMemory
	}
	if calls == 0 {
		calls = defaultCalls
	}
	return size, timeout, memory, calls, nil
}

// Stats returns a snapshot of ws. It does not block on calls in flight.
func (ws *Workers) Stats() Stats {
	size, _, _, _, _ := ws.resolved()
	ws.mu.Lock()
	running := len(ws.all)
	ws.mu.Unlock()
	c := &ws.stats
	return Stats{
		Size: size, Running: running, Busy: int(c.busy.Load()),
		Started: c.started.Load(), Restarts: c.restarts.Load(), Calls: c.calls.Load(),
		KilledTime: c.killedTime.Load(), KilledMemory: c.killedMemory.Load(),
		Cancelled: c.cancelled.Load(), Crashed: c.crashed.Load(), Recycled: c.recycled.Load(),
	}
}

// Close kills every worker, idle or busy, and returns once each has
// ended. A call in flight fails with a *WorkerError wrapping
// ErrClosed, and so does every later call. Close is idempotent.
func (ws *Workers) Close() error {
	ws.mu.Lock()
	ws.closed = true
	ws.idle = nil
	for w := range ws.all {
		w.kill()
	}
	ws.mu.Unlock()
	ws.reaped.Wait()
	return nil
}

// A worker is one worker process.
type worker struct {
	cmd    *exec.Cmd
	in     *os.File // the write end of its standard input
	out    *os.File // the read end of its standard output
	r      *bufio.Reader
	w      *bufio.Writer
	stderr *headBuffer
	calls  int
	killed atomic.Bool
	phase  atomic.Int32     // of its call: phaseSent, phaseEvaluating or phaseOver
	exited chan struct{}    // closed once the process is reaped and its pipes closed
	state  *os.ProcessState // set before exited is closed
}

// The phases of a worker's call, in worker.phase. Stats.Busy counts the
// workers evaluating.
const (
	phaseSent       int32 = iota // the request is sent, or being sent
	phaseEvaluating              // the worker acknowledged it, and evaluates
	phaseOver                    // the call has returned
)

func (w *worker) kill() {
	w.killed.Store(true)
	w.cmd.Process.Kill()
}

// start starts a worker process and waits for its hello, as long as ctx
// allows and no longer than timeout.
func (ws *Workers) start(ctx context.Context, memory int64, timeout time.Duration) (*worker, error) {
	ws.mu.Lock()
	if ws.exe == "" && ws.exeErr == nil {
		ws.exe, ws.exeErr = os.Executable()
	}
	exe, exeErr := ws.exe, ws.exeErr
	ws.mu.Unlock()
	if exeErr != nil {
		return nil, fmt.Errorf("cannot start a worker: %w", exeErr)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	// A test binary that does not serve workers runs no test; a program
	// that does not tells nothing but its refusal of the flag.
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+strconv.FormatInt(memory, 10))
	cmd.Stdin, cmd.Stdout = inR, outW
	w := &worker{cmd: cmd, in: inW, out: outR, stderr: &headBuffer{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	cmd.SysProcAttr = workerAttr()
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, ErrClosed
	}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		ws.mu.Unlock()
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("cannot start a worker: %w", err)
	}
	if ws.all == nil {
		ws.all = map[*worker]bool{}
	}
	ws.all[w] = true
	ws.stats.started.Add(1)
	if ws.pending > 0 {
		ws.pending--
		ws.stats.restarts.Add(1)
	}
	ws.reaped.Add(1)
	ws.mu.Unlock()
	go ws.reap(w)

	w.r, w.w = bufio.NewReaderSize(outR, 64<<10), bufio.NewWriterSize(inW, 64<<10)
	hello := make(chan error, 1)
	go func() {
		buf := make([]byte, len(workerHello))
		_, err := io.ReadFull(w.r, buf)
		if err == nil && string(buf) != workerHello {
			err = errors.New("it wrote something else first")
		}
		hello <- err
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err = <-hello:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("it did not answer within %v", timeout)
	}
	if err == nil {
		return w, nil
	}
	w.kill()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	<-w.exited
	ws.mu.Lock()
	closed := ws.closed
	ws.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	return nil, fmt.Errorf("%s did not start as an isolate worker (does its main, or TestMain, call isolate.Main first?): %v%s",
		exe, err, w.describeExit())
}

// reap waits for w's process to end and closes its pipes: a goroutine
// still reading or writing them then fails at once.
func (ws *Workers) reap(w *worker) {
	defer ws.reaped.Done()
	w.cmd.Wait()
	w.state = w.cmd.ProcessState
	w.in.Close()
	w.out.Close()
	ws.mu.Lock()
	delete(ws.all, w)
	ws.mu.Unlock()
	close(w.exited)
}

// retire kills w, unless it is to end by itself (its input closed), and
// counts it for replacement.
func (ws *Workers) retire(w *worker, gently bool) {
	if gently {
		w.in.Close()
	} else {
		w.kill()
	}
	ws.mu.Lock()
	if !ws.closed {
		ws.pending++
	}
	ws.mu.Unlock()
}

// describeExit returns how w's process ended and the start of what it
// wrote to its standard error, to follow an error message.
func (w *worker) describeExit() string {
	s := ""
	if w.state != nil {
		s = ": " + w.state.String()
	}
	// The first paragraph: a panic's or a fatal error's message, before
	// the stacks.
	msg, _, _ := bytes.Cut(w.stderr.bytes(), []byte("\n\n"))
	if msg := bytes.TrimSpace(msg); len(msg) > 0 {
		s += "; it wrote: " + string(msg)
	}
	return s
}

// slot waits as long as ctx allows for one of the size slots, and returns
// a function that gives it back.
func (ws *Workers) slot(ctx context.Context, size int) (func(), error) {
	ws.mu.Lock()
	if ws.slots == nil {
		ws.slots = make(chan struct{}, size)
	}
	slots, closed := ws.slots, ws.closed
	ws.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return func() { <-slots }, nil
}

// worker returns a warm worker, or a fresh one (and reports so) when none
// is idle, for a call that holds a slot.
func (ws *Workers) worker(ctx context.Context, memory int64, timeout time.Duration) (w *worker, fresh bool, err error) {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return nil, false, ErrClosed
	}
	for n := len(ws.idle); n > 0; n-- {
		w := ws.idle[n-1]
		ws.idle = ws.idle[:n-1]
		select {
		case <-w.exited: // ended while idle: killed from outside
			ws.stats.crashed.Add(1)
			ws.pending++
			continue
		default:
		}
		ws.mu.Unlock()
		return w, false, nil
	}
	ws.mu.Unlock()
	w, err = ws.start(ctx, memory, timeout)
	return w, true, err
}

// freshRetries is how many times a call whose fresh worker ended before it
// acknowledged the request is sent to another. A warm worker that did is
// replaced without counting, as long as the call has tried fewer than
// Size+freshRetries workers: there are at most Size warm ones at a time.
const freshRetries = 2

// call sends req to a worker and returns its response, keeping the
// budgets: op and dir name the call in its errors. A worker that ends
// before it acknowledges the request never started it, and the call goes
// to another.
func (ws *Workers) call(ctx context.Context, op, dir string, req *workerRequest) (*workerResponse, error) {
	size, timeout, memory, calls, err := ws.resolved()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, &WorkerError{Op: op, Dir: dir, Err: fmt.Errorf("the call's frames: %w", err)}
	}
	failed := func(err error) error {
		if ctx.Err() != nil && err == ctx.Err() {
			return err
		}
		return &WorkerError{Op: op, Dir: dir, Err: err}
	}
	release, err := ws.slot(ctx, size)
	if err != nil {
		return nil, failed(err)
	}
	defer release()
	for tries, freshTries := 0, 0; ; tries++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w, fresh, err := ws.worker(ctx, memory, timeout)
		if err != nil {
			return nil, failed(err)
		}
		last := (fresh && freshTries == freshRetries) || tries == size+freshRetries
		resp, unread, err := ws.send(ctx, w, op, dir, data, timeout, memory, calls, last)
		if !unread {
			return resp, err
		}
		if fresh {
			freshTries++
		}
	}
}

// send sends data, a request, to w and returns its response, keeping the
// budgets. When w ends before it acknowledges the request, send replaces
// it and reports the request unread, unless w is the last the call may
// try, or the Workers are closed.
func (ws *Workers) send(ctx context.Context, w *worker, op, dir string, data []byte, timeout time.Duration, memory int64, calls int, last bool) (_ *workerResponse, unread bool, _ error) {
	type result struct {
		resp  *workerResponse
		err   error
		acked bool
	}
	// The worker evaluates the call from its acknowledgement until the
	// call returns, or w goes back among the idle workers; the goroutine
	// that reads the acknowledgement may outlive the call.
	w.phase.Store(phaseSent)
	over := func() {
		if w.phase.Swap(phaseOver) == phaseEvaluating {
			ws.stats.busy.Add(-1)
		}
	}
	defer over()
	done := make(chan result, 1)
	go func() {
		if err := writePayload(w.w, data); err != nil {
			done <- result{err: err}
			return
		}
		if err := readAck(w.r); err != nil {
			done <- result{err: err}
			return
		}
		if w.phase.CompareAndSwap(phaseSent, phaseEvaluating) {
			ws.stats.busy.Add(1)
		}
		resp, err := readResponse(w.r, maxFrame(memory))
		done <- result{resp, err, true}
	}()
	// ended reports whether err, the call's pipes' error, says that the
	// worker closed them: it is ending. Any other error is a frame the
	// pool could not write or read.
	ended := func(err error) bool {
		var pe *fs.PathError
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &pe)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var poll <-chan time.Time
	if _, ok := residentMemory(w.cmd.Process.Pid); ok {
		t := time.NewTicker(workerPoll)
		defer t.Stop()
		poll = t.C
	}
	budget := func(name string, value int64, n *atomic.Uint64) error {
		n.Add(1)
		ws.retire(w, false)
		return &BudgetError{Op: op, Dir: dir, Budget: name, Value: value}
	}
	for {
		select {
		case r := <-done:
			if r.err == nil {
				over()
				ws.stats.calls.Add(1)
				w.calls++
				ws.keep(w, calls)
				return r.resp, false, nil
			}
			if !ended(r.err) {
				// Not an end: the worker is killed at once.
				ws.retire(w, false)
				ws.stats.crashed.Add(1)
				return nil, false, &WorkerError{Op: op, Dir: dir, Err: fmt.Errorf("the call's frames: %w", r.err)}
			}
			if !r.acked && !last {
				// Ended before it read the request: killed from outside
				// while idle, or while it read. The call was never its.
				ws.retire(w, false)
				ws.mu.Lock()
				closed := ws.closed
				ws.mu.Unlock()
				if closed {
					return nil, false, &WorkerError{Op: op, Dir: dir, Err: ErrClosed}
				}
				ws.stats.crashed.Add(1)
				return nil, true, nil
			}
			return nil, false, ws.lost(ctx, w, op, dir, memory, timer.C)
		case <-ctx.Done():
			ws.stats.cancelled.Add(1)
			ws.retire(w, false)
			return nil, false, ctx.Err()
		case <-timer.C:
			return nil, false, budget("time", int64(timeout), &ws.stats.killedTime)
		case <-poll:
			if rss, ok := residentMemory(w.cmd.Process.Pid); ok && rss > memory {
				return nil, false, budget("memory", memory, &ws.stats.killedMemory)
			}
		}
	}
}

// keep puts w back among the idle workers, or retires it after calls
// calls, or once the Workers are closed.
func (ws *Workers) keep(w *worker, calls int) {
	ws.mu.Lock()
	if !ws.closed && w.calls < calls {
		ws.idle = append(ws.idle, w)
		ws.mu.Unlock()
		return
	}
	closed := ws.closed
	ws.mu.Unlock()
	if !closed {
		ws.stats.recycled.Add(1)
	}
	ws.retire(w, true)
}

// lost returns the error of a call whose worker closed its output before
// it answered.
func (ws *Workers) lost(ctx context.Context, w *worker, op, dir string, memory int64, timeout <-chan time.Time) error {
	// The process has closed its output, and so is ending: wait for it,
	// to tell why, as ctx and the time budget allow. Past the budget it is
	// killed, and then ends however loaded the machine is, so that how it
	// ended (a memory budget, a crash) decides the error, never how long
	// its exit took.
	if !w.killed.Load() {
		select {
		case <-w.exited:
		case <-ctx.Done():
		case <-timeout:
		}
	}
	ws.retire(w, false)
	select {
	case <-w.exited:
	case <-ctx.Done():
	}
	ws.mu.Lock()
	closed := ws.closed
	ws.mu.Unlock()
	select {
	case <-w.exited:
	default:
		if closed {
			return &WorkerError{Op: op, Dir: dir, Err: ErrClosed}
		}
		return ctx.Err()
	}
	if closed {
		return &WorkerError{Op: op, Dir: dir, Err: ErrClosed}
	}
	if w.pastMemory() {
		ws.stats.killedMemory.Add(1)
		return &BudgetError{Op: op, Dir: dir, Budget: "memory", Value: memory}
	}
	ws.stats.crashed.Add(1)
	return &WorkerError{Op: op, Dir: dir, Err: fmt.Errorf("the worker process ended before it answered%s", w.describeExit())}
}

// pastMemory reports whether w's process ended past its memory budget:
// by its own watch, or refused memory by the operating system.
func (w *worker) pastMemory() bool {
	if w.state != nil && w.state.ExitCode() == exitMemory {
		return true
	}
	msg := w.stderr.bytes()
	return bytes.Contains(msg, []byte("fatal error: runtime: out of memory")) ||
		bytes.Contains(msg, []byte("fatal error: runtime: cannot allocate memory"))
}

// A headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *headBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *headBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}

// kernel returns the Kernel the workers evaluate for.
func (ws *Workers) kernel() *kernel.Kernel {
	if ws.Kernel == nil {
		return kernel.New()
	}
	return ws.Kernel
}

// Bounds returns the Kernel's Limits as it holds them: the Limits each
// worker reads and evaluates under.
func (ws *Workers) Bounds() kernel.Limits { return ws.Kernel.Bounds() }

// BuildPlatform is [kernel.Kernel.BuildPlatform] in a worker, which reads
// the directory itself: its result and errors are the Kernel's. It waits
// for a free worker as long as ctx allows. When ctx ends the worker is
// killed and BuildPlatform returns ctx.Err() at once; past a budget it
// fails with a [*BudgetError], and when its worker cannot start or ends
// after it acknowledged the request but before it answers, with a
// [*WorkerError]; a worker that ends before is replaced (see [Workers]).
func (ws *Workers) BuildPlatform(ctx context.Context, dir string) (*kernel.Platform, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := ws.call(ctx, "build", abs, &workerRequest{Op: "build", Limits: ws.Bounds(), Dir: abs})
	if err != nil {
		return nil, err
	}
	if resp.Err != nil {
		return nil, kernel.DecodeError(resp.Err)
	}
	return resp.Platform, nil
}

// ReadInstance is [kernel.Kernel.ReadInstance], in the caller's process:
// a read evaluates nothing.
func (ws *Workers) ReadInstance(ctx context.Context, in kernel.Instance) (*kernel.InstanceSnapshot, error) {
	return ws.kernel().ReadInstance(ctx, in)
}

// Render is [kernel.Kernel.Render] in a worker: the instance is read in
// the caller's process (unless in.Snapshot holds it) and sent; the worker
// reads the platform's directory itself. Its result and errors are the
// Kernel's; it waits, and fails, as BuildPlatform does.
func (ws *Workers) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	if err := ctx.Err(); err != nil {
		return kernel.RenderOutput{}, err
	}
	// An input the Kernel refuses (no Platform, or both an Instance and
	// a Snapshot) goes as it is: the worker refuses it as the Kernel
	// does, before it reads anything. Otherwise the instance is read here.
	if in.Platform != nil && in.Snapshot == nil {
		snap, err := ws.ReadInstance(ctx, in.Instance)
		if err != nil {
			return kernel.RenderOutput{}, err
		}
		in.Snapshot, in.Instance = snap, kernel.Instance{}
	}
	dir := ""
	if in.Snapshot != nil {
		dir = in.Snapshot.Dir()
	}
	req := &workerRequest{Op: "render", Limits: ws.Bounds(), Platform: in.Platform, Instance: in.Snapshot, Unread: in.Instance, Skew: in.Skew}
	resp, err := ws.call(ctx, "render", dir, req)
	if err != nil {
		return kernel.RenderOutput{}, err
	}
	if resp.Err != nil {
		return kernel.RenderOutput{}, kernel.DecodeError(resp.Err)
	}
	return *resp.Output, nil
}
