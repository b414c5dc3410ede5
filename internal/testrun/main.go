// Command testrun is the repository's test command, go test with a line
// of progress: go run ./internal/testrun -race leasekit.dev/...
//
// It takes go test's flags and packages (a test binary's own flag as
// -name=value). First it builds the packages the tests import, with the
// same build flags, counting them as it goes; then it runs go test -json
// and prints a line when a package starts, each package's result line as
// go test prints it (ok, FAIL, no test files), the output of each test
// that fails, each test that took more than 20 seconds, and, when nothing
// has been printed for 30 seconds, what is still running. Its exit status
// is go test's. With -json or -v it runs go test as it is, with no build
// step.
//
// Each property test draws [Checks] cases (rapid's RAPID_CHECKS, which
// testrun sets when the environment does not): enough to prove each
// promise once. Depth is asked for as rapid asks for it, RAPID_CHECKS=N in
// the environment or -rapid.checks=N; CI asks for it.
//
// TESTRUN_JSON=file keeps go test's whole -json stream in file.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Checks is the number of cases a property test draws unless
// RAPID_CHECKS or -rapid.checks says otherwise.
const Checks = 20

// testEnv is the environment of go test: this process's, with
// RAPID_CHECKS set to Checks unless it is set and not empty.
func testEnv() []string {
	env := os.Environ()
	if os.Getenv("RAPID_CHECKS") == "" { // an empty one would make rapid panic
		env = append(env, "RAPID_CHECKS="+strconv.Itoa(Checks))
	}
	return env
}

// slow is how long a test runs before its end is printed; quiet, how long
// the output stays silent before a line says what runs.
const (
	slow  = 20 * time.Second
	quiet = 30 * time.Second
)

func main() {
	signal.Ignore(os.Interrupt) // go test gets it too, and ends its tests; we wait for it
	os.Exit(run("go", os.Args[1:], os.Stdout, os.Stderr, time.Now))
}

// run runs the test command with goCmd as the go command and returns the
// exit status.
func run(goCmd string, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	if slices.ContainsFunc(args, func(a string) bool { return plainFlag(a, "json") || plainFlag(a, "v") }) {
		cmd := command(goCmd, append([]string{"test"}, args...), stdout, stderr)
		cmd.Env = testEnv()
		return status(cmd.Run())
	}
	start := now()
	dir := args[:dirFlag(args)]
	build, pkgs := buildArgs(args[len(dir):])
	w := &printer{w: stdout, now: now, last: now()}
	prebuild(goCmd, dir, build, pkgs, w, stderr, now)

	cmd := command(goCmd, slices.Concat([]string{"test"}, dir, []string{"-json"}, args[len(dir):]), nil, stderr)
	cmd.Env = testEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 1
	}
	var stream io.Reader = out
	if name := os.Getenv("TESTRUN_JSON"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(stderr, "testrun:", err)
			return 1
		}
		defer f.Close()
		stream = io.TeeReader(out, f)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testrun:", err)
		return 1
	}
	r := newRelay(w)
	stop := w.ticker(r.running)
	r.read(stream)
	stop()
	code := status(cmd.Wait())
	r.summary(now().Sub(start), code)
	return code
}

func command(goCmd string, args []string, stdout, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(goCmd, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd
}

// status is the exit status of a command that returned err.
func status(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	}
	return 1
}

// plainFlag reports whether arg is the boolean flag name set (-name,
// --name, -name=true).
func plainFlag(arg, name string) bool {
	a := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	return a != arg && (a == name || a == name+"=true")
}

// dirFlag returns how many of args, at their start, are the go command's
// -C flag, which must come first.
func dirFlag(args []string) int {
	switch {
	case len(args) == 0:
	case args[0] == "-C" || args[0] == "--C":
		return min(2, len(args))
	case strings.HasPrefix(args[0], "-C=") || strings.HasPrefix(args[0], "--C="):
		return 1
	}
	return 0
}

// valueFlags are the go test flags (build flags included) whose value may
// be the next argument.
var valueFlags = map[string]bool{
	"asmflags": true, "bench": true, "benchtime": true, "blockprofile": true, "blockprofilerate": true,
	"C": true, "count": true, "coverpkg": true, "covermode": true, "coverprofile": true, "cpu": true,
	"cpuprofile": true, "exec": true, "fuzz": true, "fuzzminimizetime": true, "fuzztime": true,
	"gcflags": true, "list": true, "ldflags": true, "memprofile": true, "memprofilerate": true,
	"mod": true, "modfile": true, "mutexprofile": true, "mutexprofilefraction": true, "o": true,
	"outputdir": true, "overlay": true, "p": true, "parallel": true, "pgo": true, "run": true,
	"shuffle": true, "skip": true, "tags": true, "timeout": true, "toolexec": true, "trace": true,
}

// buildFlags are the build flags that change what is compiled.
var buildFlags = map[string]bool{
	"asan": true, "asmflags": true, "gcflags": true, "ldflags": true, "mod": true,
	"modfile": true, "msan": true, "overlay": true, "pgo": true, "race": true, "tags": true,
	"toolexec": true, "trimpath": true,
}

// buildArgs splits go test's arguments into the build flags that change
// what is compiled and the packages. A test binary's own flag with its
// value in the next argument would be taken for a package: write it
// -name=value.
func buildArgs(args []string) (build, pkgs []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pkgs = append(pkgs, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		take := !hasValue && valueFlags[name] && i+1 < len(args)
		if buildFlags[name] {
			build = append(build, a)
			if take {
				build = append(build, args[i+1])
			}
		}
		if take {
			i++
		}
	}
	return build, pkgs
}

// prebuild compiles the non-test packages the tests of pkgs import, with
// the build flags, and prints how many it compiled as it goes; go test
// then compiles only the tests themselves. Its failures are go test's to
// report, in its own words.
func prebuild(goCmd string, dir, build, pkgs []string, w *printer, stderr io.Writer, now func() time.Time) {
	start := now()
	list := command(goCmd, slices.Concat([]string{"list"}, dir, []string{"-deps", "-test", "-f", "{{if or .GoFiles .CgoFiles}}{{.Standard}} {{.ImportPath}}{{end}}"}, build, pkgs), nil, stderr)
	listed, err := list.Output()
	if err != nil {
		w.line("build: go list failed; go test reports why")
		return
	}
	// go build -v names the standard library's packages it compiles too:
	// they count, but need not be named.
	var deps []string
	all := 0
	for l := range strings.Lines(string(listed)) {
		std, p, _ := strings.Cut(strings.TrimSpace(l), " ")
		// Leave out the test variants ("p [p.test]") and test mains.
		if p == "" || strings.HasSuffix(p, ".test") || strings.Contains(p, " ") {
			continue
		}
		all++
		if std == "false" {
			deps = append(deps, p)
		}
	}
	w.line(fmt.Sprintf("build: %d packages the tests import, %d of them the standard library's (%s)", all, all-len(deps), strings.Join(append([]string{"go build -v"}, build...), " ")))
	cmd := command(goCmd, slices.Concat([]string{"build"}, dir, []string{"-v"}, build, deps), nil, nil)
	out, err := cmd.StderrPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		w.line("build: " + err.Error())
		return
	}
	compiled := 0
	var mu sync.Mutex
	stop := w.ticker(func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("build: %d of %d packages compiled so far, the rest cached or to come (%s)", compiled, all, round(now().Sub(start)))
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		// A line is a package compiled, or part of a failure that go
		// test reports.
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") && !strings.ContainsAny(l, " \t:") {
			mu.Lock()
			compiled++
			mu.Unlock()
		}
	}
	stop()
	if err := cmd.Wait(); err != nil {
		w.line(fmt.Sprintf("build: %d packages compiled, then a failure; go test reports it (%s)", compiled, round(now().Sub(start))))
		return
	}
	w.line(fmt.Sprintf("build: %d packages compiled, the rest cached (%s)", compiled, round(now().Sub(start))))
}

// printer writes whole lines and knows when it last did.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	now  func() time.Time
	last time.Time
}

func (p *printer) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, strings.TrimSuffix(s, "\n")+"\n")
	p.last = p.now()
}

// ticker prints what status returns whenever nothing has been printed for
// quiet, until stop is called.
func (p *printer) ticker(status func() string) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			p.mu.Lock()
			silent := p.now().Sub(p.last) >= quiet
			p.mu.Unlock()
			if silent {
				p.line(status())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// event is one line of go test -json (cmd/test2json's TestEvent, and go
// build's BuildEvent).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// pkgState is what the relay knows of a package.
type pkgState struct {
	started time.Time
	tests   map[string]time.Time // top-level tests running, by start
	output  map[string][]string  // by top-level test, what it printed
	done    bool
	failed  bool
	elapsed float64
}

// relay turns go test's -json stream into the lines run prints.
type relay struct {
	w    *printer
	mu   sync.Mutex
	pkgs map[string]*pkgState
	// order is the packages in the order they started.
	order []string
	tests []testTime
}

type testTime struct {
	pkg, test string
	elapsed   float64
}

func newRelay(w *printer) *relay { return &relay{w: w, pkgs: map[string]*pkgState{}} }

func (r *relay) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{tests: map[string]time.Time{}, output: map[string][]string{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

// read relays the stream until it ends. A line that is not an event is
// printed as it is.
func (r *relay) read(stream io.Reader) {
	br := bufio.NewReader(stream)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			var ev event
			if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
				r.w.line(line)
			} else {
				r.event(ev)
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *relay) event(ev event) {
	r.mu.Lock()
	var lines []string
	defer func() {
		r.mu.Unlock()
		for _, l := range lines {
			r.w.line(l)
		}
	}()
	switch ev.Action {
	case "build-output":
		lines = append(lines, ev.Output)
		return
	case "build-fail":
		return
	}
	p := r.pkg(ev.Package)
	top, _, sub := strings.Cut(ev.Test, "/")
	switch {
	case ev.Action == "start":
		p.started = r.w.now()
		lines = append(lines, "start\t"+ev.Package)
	case ev.Test == "" && ev.Action == "output":
		// The package's own lines: ok, FAIL, ?, a panic outside a test;
		// a plain go test prints these, and PASS only with -v.
		if o := strings.TrimSuffix(ev.Output, "\n"); o != "PASS" && !strings.HasPrefix(o, "=== ") {
			lines = append(lines, ev.Output)
		}
	case ev.Test == "":
		if ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip" {
			p.done, p.failed, p.elapsed = true, ev.Action == "fail", ev.Elapsed
			p.tests = map[string]time.Time{}
		}
	case ev.Action == "run" && !sub:
		p.tests[top] = r.w.now()
	case ev.Action == "output":
		if o := ev.Output; !strings.HasPrefix(o, "=== ") {
			p.output[top] = append(p.output[top], o)
		}
	case !sub && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
		delete(p.tests, top)
		r.tests = append(r.tests, testTime{ev.Package, top, ev.Elapsed})
		if ev.Action == "fail" {
			lines = append(lines, p.output[top]...)
		} else if ev.Elapsed >= slow.Seconds() {
			lines = append(lines, fmt.Sprintf("slow \t%s\t%s %s in %.1fs", ev.Package, top, ended[ev.Action], ev.Elapsed))
		}
		delete(p.output, top)
	}
}

var ended = map[string]string{"pass": "passed", "skip": "skipped"}

// running says what runs: the packages started and not done, each with
// its longest-running test, or that the test binaries are being built.
func (r *relay) running() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.w.now()
	var parts []string
	for _, name := range r.order {
		p := r.pkgs[name]
		if p.done || p.started.IsZero() {
			continue
		}
		part := fmt.Sprintf("%s (%s", name, round(now.Sub(p.started)))
		var longest string
		for t, at := range p.tests {
			if longest == "" || at.Before(p.tests[longest]) || at.Equal(p.tests[longest]) && t < longest {
				longest = t
			}
		}
		if longest != "" {
			part += fmt.Sprintf(", %s for %s", longest, round(now.Sub(p.tests[longest])))
		}
		parts = append(parts, part+")")
	}
	if len(parts) == 0 {
		return "build: compiling and linking the test binaries"
	}
	return "running: " + strings.Join(parts, ", ")
}

// summary prints the slowest tests and one line of counts. go test's own
// lines, above, say ok or FAIL for each package.
func (r *relay) summary(took time.Duration, code int) {
	r.mu.Lock()
	tests := slices.Clone(r.tests)
	var failed []string
	n := 0
	for _, name := range r.order {
		if p := r.pkgs[name]; p.done {
			n++
			if p.failed {
				failed = append(failed, name)
			}
		}
	}
	r.mu.Unlock()
	slices.SortStableFunc(tests, func(a, b testTime) int { return cmp.Compare(b.elapsed, a.elapsed) })
	var slowest []string
	for _, t := range tests[:min(5, len(tests))] {
		slowest = append(slowest, fmt.Sprintf("%s %s %.1fs", t.pkg, t.test, t.elapsed))
	}
	if len(slowest) > 0 {
		r.w.line("slowest tests: " + strings.Join(slowest, ", "))
	}
	verdict := "ok"
	if code != 0 {
		verdict = fmt.Sprintf("FAIL (exit status %d)", code)
	}
	line := fmt.Sprintf("testrun: %d packages in %s: %s", n, round(took), verdict)
	if len(failed) > 0 {
		line += "; failed: " + strings.Join(failed, " ")
	}
	r.w.line(line)
}

// round rounds d to the second, or to the tenth under ten seconds.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
