package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The test binary stands in for the go command when fakeGo is set: go
// list lists two packages, go build compiles them, and go test prints the
// stream in fakeStream and exits with fakeStatus.
const (
	fakeGo     = "TESTRUN_FAKE_GO"
	fakeStream = "TESTRUN_FAKE_STREAM"
	fakeStatus = "TESTRUN_FAKE_STATUS"
	// fakeArgs names a file to which each run of go adds its arguments.
	fakeArgs = "TESTRUN_FAKE_ARGS"
	// fakeBuildFails makes go build fail after one package.
	fakeBuildFails = "TESTRUN_FAKE_BUILD_FAILS"
	// fakeShowChecks makes go test print its RAPID_CHECKS first.
	fakeShowChecks = "TESTRUN_FAKE_SHOW_CHECKS"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeGo) == "" {
		os.Exit(m.Run())
	}
	args := os.Args[1:]
	if name := os.Getenv(fakeArgs); name != "" {
		f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, strings.Join(args, " "))
			f.Close()
		}
	}
	switch args[0] {
	case "list":
		fmt.Println("true fmt\nfalse example.com/a\nfalse example.com/a [example.com/a.test]\nfalse example.com/a.test\nfalse example.com/dep")
		os.Exit(0)
	case "build":
		if args[len(args)-2] != "example.com/a" || args[len(args)-1] != "example.com/dep" {
			fmt.Fprintln(os.Stderr, "fake go: go build of", args)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "example.com/dep")
		if os.Getenv(fakeBuildFails) != "" {
			fmt.Fprintln(os.Stderr, "# example.com/a\na.go:3:1: syntax error")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "example.com/a")
		os.Exit(0)
	case "test":
		stream, err := os.ReadFile(os.Getenv(fakeStream))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if v, ok := os.LookupEnv("RAPID_CHECKS"); ok && os.Getenv(fakeShowChecks) != "" {
			fmt.Println("RAPID_CHECKS=" + v)
		}
		os.Stdout.Write(stream)
		code, _ := strconv.Atoi(os.Getenv(fakeStatus))
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "fake go: unknown command", args)
	os.Exit(2)
}

// events builds a go test -json stream: events, and lines go test prints
// outside them.
func events(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func output(pkg, test, line string) string {
	return fmt.Sprintf(`{"Action":"output","Package":%q,"Test":%q,"Output":%q}`, pkg, test, line+"\n")
}

func action(pkg, test, act string, elapsed float64) string {
	return fmt.Sprintf(`{"Action":%q,"Package":%q,"Test":%q,"Elapsed":%g}`, act, pkg, test, elapsed)
}

// runFake runs the command against the fake go with stream and status.
func runFake(t *testing.T, stream string, code int, args ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := t.TempDir() + "/stream"
	if err := os.WriteFile(name, []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TESTRUN_JSON", "") // not the stream of a testrun that runs this test
	t.Setenv(fakeGo, "1")
	t.Setenv(fakeStream, name)
	t.Setenv(fakeStatus, strconv.Itoa(code))
	var stdout, stderr bytes.Buffer
	got := run(self, args, &stdout, &stderr, time.Now)
	if stderr.Len() > 0 {
		t.Logf("stderr: %s", stderr.String())
	}
	return stdout.String(), got
}

// holds fails t unless out holds each of parts, or, with want false, none.
func holds(t *testing.T, out string, want bool, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(out, p) != want {
			t.Errorf("output holds %q: %v, want %v:\n%s", p, !want, want, out)
		}
	}
}

// A passing run prints the build, a line as each package starts, go
// test's own result line and the summary, and no test's output.
func TestRunPasses(t *testing.T) {
	stream := events(
		action("example.com/a", "", "start", 0),
		action("example.com/a", "TestX", "run", 0),
		output("example.com/a", "TestX", "=== RUN   TestX"),
		output("example.com/a", "TestX", "    x_test.go:9: a log line"),
		output("example.com/a", "TestX", "--- PASS: TestX (25.00s)"),
		action("example.com/a", "TestX", "pass", 25),
		output("example.com/a", "", "PASS"),
		output("example.com/a", "", "ok  \texample.com/a\t25.1s"),
		action("example.com/a", "", "pass", 25.1),
	)
	out, code := runFake(t, stream, 0, "-race", "-run", "X", "example.com/a")
	if code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	holds(t, out, true, "build: 3 packages the tests import, 1 of them the standard library's (go build -v -race)\n",
		"build: 2 packages compiled, the rest cached",
		"start\texample.com/a\n",
		"slow \texample.com/a\tTestX passed in 25.0s\n",
		"ok  \texample.com/a\t25.1s\n",
		"testrun: 1 packages in ")
	holds(t, out, false, "a log line", "=== RUN", "PASS\n")
	if !strings.HasSuffix(out, ": ok\n") {
		t.Errorf("last line does not say ok:\n%s", out)
	}
}

// A failing run keeps go test's exit status and prints the failing test's
// output, subtests' included, and the FAIL lines as go test prints them.
func TestRunFails(t *testing.T) {
	stream := events(
		action("example.com/a", "", "start", 0),
		action("example.com/a", "TestOK", "run", 0),
		output("example.com/a", "TestOK", "    ok_test.go:3: fine"),
		action("example.com/a", "TestOK", "pass", 0.1),
		action("example.com/a", "TestBad", "run", 0),
		action("example.com/a", "TestBad/sub", "run", 0),
		output("example.com/a", "TestBad/sub", "    bad_test.go:7: want 1, got 2"),
		output("example.com/a", "TestBad/sub", "    --- FAIL: TestBad/sub (0.00s)"),
		action("example.com/a", "TestBad/sub", "fail", 0),
		output("example.com/a", "TestBad", "--- FAIL: TestBad (0.00s)"),
		action("example.com/a", "TestBad", "fail", 0),
		output("example.com/a", "", "FAIL"),
		output("example.com/a", "", "FAIL\texample.com/a\t0.2s"),
		action("example.com/a", "", "fail", 0.2),
		"FAIL",
	)
	out, code := runFake(t, stream, 3, "example.com/a")
	if code != 3 {
		t.Errorf("exit status %d, want go test's 3", code)
	}
	holds(t, out, true, "    bad_test.go:7: want 1, got 2\n    --- FAIL: TestBad/sub (0.00s)\n--- FAIL: TestBad (0.00s)\n",
		"FAIL\nFAIL\texample.com/a\t0.2s\nFAIL\n",
		"testrun: 1 packages in ",
		": FAIL (exit status 3); failed: example.com/a\n")
	holds(t, out, false, "fine") // a passing test's output
}

// A build failure is printed as go test reports it.
func TestRunBuildFails(t *testing.T) {
	stream := events(
		`{"ImportPath":"example.com/a [example.com/a.test]","Action":"build-output","Output":"# example.com/a\n"}`,
		`{"ImportPath":"example.com/a [example.com/a.test]","Action":"build-output","Output":"a.go:3:1: syntax error\n"}`,
		`{"ImportPath":"example.com/a [example.com/a.test]","Action":"build-fail"}`,
		action("example.com/a", "", "start", 0),
		output("example.com/a", "", "FAIL\texample.com/a [build failed]"),
		`{"Action":"fail","Package":"example.com/a","Elapsed":0,"FailedBuild":"example.com/a [example.com/a.test]"}`,
	)
	t.Setenv(fakeBuildFails, "1")
	out, code := runFake(t, stream, 1, "example.com/a")
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if !strings.Contains(out, "build: 1 packages compiled, then a failure; go test reports it") {
		t.Errorf("the build step does not say it failed:\n%s", out)
	}
	if strings.Count(out, "syntax error") != 1 {
		t.Errorf("the failure is not printed once, as go test prints it:\n%s", out)
	}
	if !strings.Contains(out, "# example.com/a\na.go:3:1: syntax error\n") || !strings.Contains(out, "FAIL\texample.com/a [build failed]\n") {
		t.Errorf("the build failure is not printed as go test prints it:\n%s", out)
	}
}

// With -v or -json, go test's output is passed on as it is.
func TestRunVerbatim(t *testing.T) {
	stream := events(action("example.com/a", "", "start", 0), output("example.com/a", "", "ok  \texample.com/a\t0.1s"))
	for _, flag := range []string{"-v", "-json", "--json=true"} {
		out, code := runFake(t, stream, 4, flag, "example.com/a")
		if out != stream || code != 4 {
			t.Errorf("with %s: exit status %d and output\n%s\nwant 4 and the stream as it is", flag, code, out)
		}
	}
}

// The go command's -C, which must come first, stays first.
func TestRunKeepsDirFirst(t *testing.T) {
	stream := events(action("example.com/a", "", "start", 0))
	for _, dir := range [][]string{{"-C", "sub"}, {"-C=sub"}} {
		name := t.TempDir() + "/args"
		t.Setenv(fakeArgs, name)
		runFake(t, stream, 0, append(dir, "-race", "example.com/a")...)
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		ran := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(ran) != 3 {
			t.Fatalf("with %q, the go commands run: %q, want list, build and test", dir, ran)
		}
		for i, cmd := range []string{"list", "build", "test"} {
			if want := strings.Join(append([]string{cmd}, dir...), " ") + " "; !strings.HasPrefix(ran[i], want) {
				t.Errorf("with %q, go ran as %q, want it to begin %q", dir, ran[i], want)
			}
		}
	}
}

func TestBuildArgs(t *testing.T) {
	build, pkgs := buildArgs([]string{"-race", "-run", "TestX", "-count=1", "-tags", "a,b", "./...", "-timeout", "1m", "leasekit.dev/x", "-rapid.checks=5", "-gcflags=-N"})
	if want := []string{"-race", "-tags", "a,b", "-gcflags=-N"}; !slices.Equal(build, want) {
		t.Errorf("build flags %q, want %q", build, want)
	}
	if want := []string{"./...", "leasekit.dev/x"}; !slices.Equal(pkgs, want) {
		t.Errorf("packages %q, want %q", pkgs, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the ticker's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// When nothing has been printed for quiet, a line says what runs: the
// test binaries' build before any package starts, then each package
// running with its longest-running test; and only then.
func TestQuietRunSaysWhatRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		w := &printer{w: &buf, now: time.Now, last: time.Now()}
		r := newRelay(w)
		stop := w.ticker(r.running)
		defer stop()

		time.Sleep(quiet - time.Second)
		synctest.Wait()
		if got := buf.String(); got != "" {
			t.Fatalf("printed before quiet: %q", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := buf.String(); got != "build: compiling and linking the test binaries\n" {
			t.Fatalf("after %v of silence before any package: %q", quiet, got)
		}

		r.event(event{Action: "start", Package: "example.com/a"})
		r.event(event{Action: "run", Package: "example.com/a", Test: "TestLong"})
		time.Sleep(10 * time.Second)
		r.event(event{Action: "run", Package: "example.com/a", Test: "TestShort"})
		time.Sleep(quiet - 10*time.Second)
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if got, want := lines[len(lines)-1], "running: example.com/a (30s, TestLong for 30s)"; got != want {
			t.Fatalf("after %v of silence: %q, want %q", quiet, got, want)
		}
	})
}

// go test runs with RAPID_CHECKS at Checks, unless it is set.
func TestRunSetsRapidChecks(t *testing.T) {
	stream := events(action("example.com/a", "", "start", 0))
	t.Setenv(fakeShowChecks, "1")
	t.Setenv("RAPID_CHECKS", "") // restored when the test ends
	os.Unsetenv("RAPID_CHECKS")
	for _, args := range [][]string{{"example.com/a"}, {"-v", "example.com/a"}} {
		if out, _ := runFake(t, stream, 0, args...); !strings.Contains(out, "RAPID_CHECKS=20\n") {
			t.Errorf("with %q, go test ran without RAPID_CHECKS=20:\n%s", args, out)
		}
	}
	t.Setenv("RAPID_CHECKS", "") // which rapid would refuse
	if out, _ := runFake(t, stream, 0, "example.com/a"); !strings.Contains(out, "RAPID_CHECKS=20\n") {
		t.Errorf("with RAPID_CHECKS empty, go test ran without RAPID_CHECKS=20:\n%s", out)
	}
	t.Setenv("RAPID_CHECKS", "300")
	if out, _ := runFake(t, stream, 0, "example.com/a"); !strings.Contains(out, "RAPID_CHECKS=300\n") {
		t.Errorf("go test ran without the RAPID_CHECKS of the environment:\n%s", out)
	}
}
