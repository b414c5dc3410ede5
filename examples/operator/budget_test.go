package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"leasekit.dev/platform/isolate"
)

// TestMain serves as a kernel worker when the command's Workers, run by a
// test, start this binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}

// bombDir writes the instance shop with a body whose evaluation never
// ends on any machine (ten billion steps) and holds little memory while
// it runs (a few hundred MiB after ten seconds).
func bombDir(t *testing.T) string {
	return writeInstance(t, "shop", func(files map[string][]byte) {
		files["shop.cue"] = []byte("package shop\n\nimport \"list\"\n\nname: \"shop\"\n" +
			"requires: \"example.com/catalogs/web@v1\": \"v1.2.0\"\n" +
			"r: list.Range(0, 100000, 1)\nx: [for i in r for j in r if i < 0 {i}]\n")
	})
}

// TestRenderBombExitsNamingTheTimeBudget: the command, built and run as a
// user runs it, renders the bomb with --render-timeout 10s and exits 1,
// naming the time budget and the flag that sets it. The time budget is
// ten times what the platform's build takes on a loaded machine, and the
// memory budget is out of the bomb's reach, so only the time budget can
// stop it.
func TestRenderBombExitsNamingTheTimeBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and waits out its budget")
	}
	bin := filepath.Join(t.TempDir(), "operator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--render", bombDir(t), "--render-timeout", "10s", "--render-memory", "8GiB", "--no-sync")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitViolation {
		t.Fatalf("%v, want exit status %d\nstderr:\n%s", err, exitViolation, &stderr)
	}
	if got := stderr.String(); !strings.Contains(got, "killed past the time budget of 10s") || !strings.Contains(got, "--render-timeout") || stdout.Len() != 0 {
		t.Fatalf("stdout %q\nstderr:\n%s\nwant the time budget named on stderr, nothing on stdout", &stdout, got)
	}
	t.Logf("exit %d after %v:\n%s", exit.ExitCode(), took.Round(time.Millisecond), &stderr)
}

// TestRenderBombMemory: past --render-memory, the render fails naming
// the memory budget.
func TestRenderBombMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a bomb")
	}
	dir := writeInstance(t, "shop", func(files map[string][]byte) {
		files["shop.cue"] = []byte("package shop\n\nimport \"list\"\n\nname: \"shop\"\n" +
			"requires: \"example.com/catalogs/web@v1\": \"v1.2.0\"\n" +
			"a: {for i in list.Range(0,3000,1) {\"f\\(i)\": [for j in list.Range(0,3000,1) {j}]}}\n")
	})
	code, stdout, stderr := runArgs(t, "--render", dir, "--render-memory", "96MiB", "--render-timeout", "1h", "--no-sync")
	if code != exitViolation || stdout != "" || !strings.Contains(stderr, "memory budget of 96MiB") || !strings.Contains(stderr, "--render-memory") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

// TestRenderInProcess: --in-process renders as the workers do.
func TestRenderInProcess(t *testing.T) {
	dir := writeInstance(t, "shop", nil)
	_, isolated, _ := runArgs(t, "--render", dir, "--no-sync")
	code, inProcess, stderr := runArgs(t, "--render", dir, "--no-sync", "--in-process")
	if code != exitOK || inProcess != isolated || isolated == "" {
		t.Fatalf("exit %d, stderr %s\nin process:\n%s\nin workers:\n%s", code, stderr, inProcess, isolated)
	}
}
