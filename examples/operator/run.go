package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"

	"leasekit.dev/dirlife"
	"leasekit.dev/examples/operator/internal/demo"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// Exit statuses.
const (
	exitOK        = 0   // no violations, nothing unexpected
	exitViolation = 1   // violations or unexpected outcomes; or a render error
	exitUsage     = 2   // bad flags, or a platform directory that cannot be used
	exitInterrupt = 130 // interrupted (Ctrl-C, SIGTERM) with no violation: 128 + SIGINT, by convention
)

// run is the command: it parses args, runs the demo (or a single render)
// and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if o.render != "" {
		if err := renderDir(o.render); err != nil {
			fmt.Fprintf(stderr, "operator: %v\n", err)
			return exitUsage
		}
	}
	dir, cleanup, err := platformDir(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "operator: %v\n", err)
		return exitUsage
	}
	defer cleanup()
	k, closeKernel := newKernel(o)
	defer closeKernel()
	if o.render != "" {
		return renderOne(ctx, o, k, dir, stdout, stderr)
	}
	return runDemo(ctx, o, k, dir, stdout, stderr)
}

// renderDir refuses a --render directory that cannot be used: one that is
// missing, or not a directory. What is in it is the render's to judge.
func renderDir(dir string) error {
	info, err := os.Stat(dir)
	if pathErr, ok := err.(*fs.PathError); ok {
		err = pathErr.Err // the path is named already
	}
	if err != nil {
		return fmt.Errorf("--render %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("--render %s: not a directory: name the directory of an instance module", dir)
	}
	return nil
}

// newKernel returns the kernel o asks for: evaluating in worker processes
// with o's budgets, unless --in-process; and what stops its workers.
func newKernel(o options) (platform.Evaluator, func()) {
	if o.inProcess {
		return kernel.New(), func() {}
	}
	ws := &isolate.Workers{Timeout: o.renderTimeout, Memory: o.renderMemory}
	return ws, func() { ws.Close() }
}

// platformDir returns the directory the publisher owns and what to do with
// it at exit.
func platformDir(o options, stderr io.Writer) (string, func(), error) {
	if o.platformDir != "" {
		return o.platformDir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "leasekit-operator-")
	if err != nil {
		return "", nil, err
	}
	if o.keep {
		return dir, func() { fmt.Fprintf(stderr, "operator: kept the platform directory %s\n", dir) }, nil
	}
	return dir, func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "operator: removing the platform directory: %v\n", err)
		}
	}, nil
}

// runDemo runs the operator's main job and prints its summary.
func runDemo(ctx context.Context, o options, k platform.Evaluator, dir string, stdout, stderr io.Writer) int {
	seed := o.seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	progress := stdout
	if o.json {
		progress = stderr
	}
	cfg := demo.Config{
		Dir: dir, Duration: o.duration, Generations: o.generations, Seed: seed,
		Renders: o.renders, PublishEvery: o.publishEvery, NoSync: o.noSync, Evaluator: k,
		Progress: progress, Terminal: isTerminal(progress), Width: terminalWidth(progress),
	}
	if !o.json {
		// Printed once the directory is accepted, never before a refusal.
		cfg.Booted = func() {
			limit := fmt.Sprintf("for %v", o.duration)
			if o.generations > 0 {
				limit = fmt.Sprintf("%d times", o.generations)
				if o.duration > 0 {
					limit += fmt.Sprintf(" (at most %v)", o.duration)
				}
			}
			fmt.Fprintf(stdout, "leasekit operator: publishing platform generations to %s %s, %d concurrent renders, seed %d\n",
				dir, limit, o.renders, seed)
		}
	}
	sum, err := demo.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "operator: %v\n", dirError(err))
		return exitUsage
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(stderr, "operator: %v\n", err)
			return exitViolation
		}
	} else if err := sum.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "operator: %v\n", err)
		return exitViolation
	}
	switch {
	case !sum.OK():
		return exitViolation
	case sum.Interrupted:
		return exitInterrupt
	}
	return exitOK
}

// dirError adds the fix to a refusal of the platform directory.
func dirError(err error) error {
	if errors.Is(err, dirlife.ErrNotOwned) || errors.Is(err, dirlife.ErrUnsafeRoot) {
		return fmt.Errorf("%w: name an empty or new directory with --platform-dir, or leave it out for a temporary one", err)
	}
	return err
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && demo.IsTerminal(f)
}

// terminalWidth returns a function reporting w's width in columns, 0 when
// w is not a terminal or its width is unknown.
func terminalWidth(w io.Writer) func() int {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	return func() int { return demo.TerminalWidth(f) }
}
