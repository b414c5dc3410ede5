package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"leasekit.dev/examples/internal/size"
	"leasekit.dev/platform/isolate"
)

// options are the command's flags.
type options struct {
	duration     time.Duration
	generations  int
	seed         uint64
	renders      int
	publishEvery time.Duration
	platformDir  string
	keep         bool
	noSync       bool
	json         bool
	render       string

	renderTimeout time.Duration // a render's (and a build's) time budget in a worker
	renderMemory  int64         // a worker's memory budget, in bytes
	inProcess     bool          // evaluate in this process: no budgets
}

const usageText = `Usage: go run ./examples/operator [flags]

Runs a platform operator's main job in one process: boots a publisher on a
platform directory, publishes a stream of platform generations (catalogs
added, bumped and disabled; unchanged and changed re-publishes; a stale
one; deliberately broken ones) while a pool of concurrent renders leases the
store and renders embedded instance modules, and checks from the outside
that no leased directory is removed or changed and that superseded ones are
reclaimed promptly. Shows a status line, then a summary ending in
"violations: N". Exits 0 only when there were no violations and nothing
unexpected happened, 1 otherwise, 2 for bad flags or an unusable directory
(a --platform-dir it does not own, a --render DIR that is missing or not a
directory), 130 when interrupted (Ctrl-C) with no violation. Under go run,
the go command turns any status but 0 into its own 1, after printing
"exit status N"; build the command (go build ./examples/operator) to see N.

With --render DIR, publishes one default generation instead and renders the
instance module in DIR against it, printing its resources as YAML (with
--json, the resources or an error object as JSON).

Flags (one dash or two):
`

// parseFlags parses args; it writes -h's text, or a usage error, to stderr.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.duration = 5 * time.Second
	fs.Var((*durationFlag)(&o.duration), "duration", "how long to publish generations and render, a `duration` such as 30s or 2m; with --generations and no --duration, no limit")
	fs.IntVar(&o.generations, "generations", 0, "stop after this many publishes (0: until --duration)")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the generation stream and the renders' instance choices (0: a random seed, printed in the summary); timing still varies, so counts do too")
	fs.IntVar(&o.renders, "renders", runtime.GOMAXPROCS(0)*4, "concurrent renders, each leasing the store")
	fs.Lookup("renders").DefValue = fmt.Sprintf("%d: GOMAXPROCS x 4", o.renders)
	o.publishEvery = 100 * time.Millisecond
	fs.Var((*durationFlag)(&o.publishEvery), "publish-every", "pause between publishes, a `duration` such as 100ms")
	fs.StringVar(&o.platformDir, "platform-dir", "", "the publisher's directory `DIR`: empty or one it owned before, emptied at boot; kept at exit (default: a fresh temporary directory, removed at exit unless --keep)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary platform directory at exit and print its path")
	fs.BoolVar(&o.noSync, "no-sync", false, "turn the layout's durability (fsync) off, as for a disk wiped at boot")
	fs.BoolVar(&o.json, "json", false, "print the summary (or, with --render, the render) as JSON on stdout and nothing else there; progress goes to stderr")
	fs.StringVar(&o.render, "render", "", "render the instance module in directory `DIR` against a default generation, print the resources as YAML, and exit")
	o.renderTimeout = isolate.DefaultTimeout
	fs.Var((*durationFlag)(&o.renderTimeout), "render-timeout", "the time budget of each render and build, a `duration` such as 2s: past it, the worker evaluating it is killed and it fails")
	o.renderMemory = isolate.DefaultMemory
	fs.Var((*size.Flag)(&o.renderMemory), "render-memory", "the memory budget of each worker evaluating renders and builds, a `size` such as 256MiB or 1GiB: past it, the worker is killed and its render fails")
	fs.BoolVar(&o.inProcess, "in-process", false, "evaluate renders and builds in this process, with no time or memory budget, rather than in worker processes")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	// The flag package prints the whole usage after a parse error; a bad
	// flag gets the same two lines as a bad value instead.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return o, err
	case err != nil:
		return o, usageError(fs, "%v", err)
	}
	minMemory := int64(isolate.MinMemory)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.generations > 0 && !set["duration"] {
		o.duration = 0
	}
	switch {
	case fs.NArg() > 0:
		return o, usageError(fs, "unexpected argument %q: every input is a flag", fs.Arg(0))
	case o.renders < 1:
		return o, usageError(fs, "--renders %d: need at least one render", o.renders)
	case o.duration < 0:
		return o, usageError(fs, "--duration %v: must not be negative", o.duration)
	case o.generations < 0:
		return o, usageError(fs, "--generations %d: must not be negative", o.generations)
	case o.duration == 0 && o.generations == 0:
		return o, usageError(fs, "--duration 0 with --generations 0: the run would never end")
	case o.publishEvery <= 0:
		return o, usageError(fs, "--publish-every %v: must be positive", o.publishEvery)
	case o.renderTimeout <= 0:
		return o, usageError(fs, "--render-timeout %v: must be positive", o.renderTimeout)
	case o.renderMemory < isolate.MinMemory:
		return o, usageError(fs, "--render-memory %s: must be at least %s, what a worker holds before its first render", (*size.Flag)(&o.renderMemory), (*size.Flag)(&minMemory))
	case o.inProcess && (set["render-timeout"] || set["render-memory"]):
		return o, usageError(fs, "--in-process with --render-timeout or --render-memory: budgets are kept by worker processes only")
	case o.keep && o.platformDir != "":
		return o, usageError(fs, "--keep with --platform-dir %q: a directory you name is always kept", o.platformDir)
	}
	return o, nil
}

// A durationFlag is a time.Duration flag whose refusal of a number without
// a unit says so.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil && s != "0" {
			return fmt.Errorf("a duration needs a unit, such as %ss or %sms", s, s)
		}
		return errors.New("not a duration, such as 5s, 500ms or 1m30s")
	}
	*d = durationFlag(v)
	return nil
}

// usageError reports a bad flag value on fs's output and returns it.
func usageError(fs *flag.FlagSet, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	fmt.Fprintf(fs.Output(), "operator: %v\nRun with -h for the flags.\n", err)
	return err
}
