package isolate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"

	"leasekit.dev/platform/kernel"
)

// workerEnv marks a process that a Workers started as a worker; its value
// is the worker's memory budget in bytes.
const workerEnv = "LEASEKIT_KERNEL_WORKER"

// exitMemory is the exit code of a worker that found itself past its
// memory budget.
const exitMemory = 86

// Main serves as an isolate worker and exits, if a [Workers] started the
// process as one; otherwise it returns at once and does nothing. Workers
// start the running executable again, so a program that uses Workers
// calls Main first in its main, and a test binary first in its TestMain,
// before it parses flags or starts anything:
//
//	func main() {
//		isolate.Main()
//		...
//	}
//
// A worker reads requests on its standard input and answers on its
// standard output, one at a time, until its input ends; it acknowledges
// each request once it has read it whole, before it evaluates anything.
func Main() {
	v, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	os.Unsetenv(workerEnv)
	budget, err := strconv.ParseInt(v, 10, 64)
	if err != nil || budget <= 0 {
		fmt.Fprintf(os.Stderr, "isolate worker: %s=%q: not a memory budget in bytes\n", workerEnv, v)
		os.Exit(2)
	}
	in, out := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = nil, os.Stderr // the protocol's own: nothing else reads or writes them
	os.Exit(serveWorker(in, out, budget))
}

// serveWorker answers requests read from in on out until in ends, and
// returns the process's exit code.
func serveWorker(in io.Reader, out io.Writer, budget int64) int {
	// The runtime collects harder as the worker nears its budget, the
	// worker watches its own memory, and the operating system refuses it
	// memory well past the budget (where it can): a worker past its budget
	// ends, and the Workers that started it report the budget. The
	// parent watches the worker's resident memory too, where it can.
	debug.SetMemoryLimit(budget / 8 * 7)
	if !raceEnabled {
		limitData(budget)
	}
	go watchMemory(budget)

	r, w := bufio.NewReaderSize(in, 64<<10), bufio.NewWriterSize(out, 64<<10)
	if _, err := w.WriteString(workerHello); err != nil {
		return 1
	}
	if err := w.Flush(); err != nil {
		return 1
	}
	for {
		data, err := readPayload(r, maxFrame(budget))
		if err != nil {
			if err == io.EOF {
				return 0
			}
			fmt.Fprintf(os.Stderr, "isolate worker: reading a request: %v\n", err)
			return 1
		}
		// The request is read whole and nothing of it is evaluated yet:
		// from here on, an end of this process is the call's.
		if err := w.WriteByte(workerAck); err != nil {
			return 1
		}
		if err := w.Flush(); err != nil {
			return 1
		}
		var req workerRequest
		if err := json.Unmarshal(data, &req); err != nil {
			fmt.Fprintf(os.Stderr, "isolate worker: reading a request: %v\n", err)
			return 1
		}
		if err := writeResponse(w, answer(&req)); err != nil {
			fmt.Fprintf(os.Stderr, "isolate worker: writing a response: %v\n", err)
			return 1
		}
	}
}

// answer builds or renders as req asks, with an in-process Kernel of
// req's limits.
func answer(req *workerRequest) *workerResponse {
	ctx := context.Background()
	k := &kernel.Kernel{Limits: req.Limits}
	switch req.Op {
	case "build":
		p, err := k.BuildPlatform(ctx, req.Dir)
		return &workerResponse{Platform: p, Err: encodeError(err)}
	case "render":
		out, err := k.Render(ctx, kernel.RenderInput{Platform: req.Platform, Instance: req.Unread, Snapshot: req.Instance, Skew: req.Skew})
		if err != nil {
			return &workerResponse{Err: encodeError(err)}
		}
		return &workerResponse{Output: &out}
	}
	return &workerResponse{Err: encodeError(fmt.Errorf("isolate: worker: unknown request %q", req.Op))}
}

// encodeError returns err encoded for a response, nil for none.
func encodeError(err error) json.RawMessage {
	if err == nil {
		return nil
	}
	return kernel.EncodeError(err)
}

// maxFrame is the largest frame a worker of the memory budget reads or
// answers with.
func maxFrame(budget int64) int64 { return max(budget, 64<<20) }

// watchMemory ends the process, with exitMemory, once the memory the Go
// runtime holds from the operating system, less what it has returned to
// it, is past budget.
func watchMemory(budget int64) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for range time.Tick(workerPoll) {
		metrics.Read(samples)
		if used := int64(samples[0].Value.Uint64() - samples[1].Value.Uint64()); used > budget {
			fmt.Fprintf(os.Stderr, "isolate worker: holds %d bytes, past its memory budget of %d\n", used, budget)
			os.Exit(exitMemory)
		}
	}
}

// workerPoll is how often a worker's memory is looked at.
const workerPoll = 10 * time.Millisecond
