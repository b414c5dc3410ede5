package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"leasekit.dev/examples/operator/internal/demo"
)

// runArgs runs the command with args and returns its exit status, stdout
// and stderr.
func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestMainJSON: --json prints the summary alone on stdout. The run is
// bounded by a count of publishes, not by a duration, so that it publishes
// more than once on any machine.
func TestMainJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "platform")
	code, stdout, stderr := runArgs(t, "--generations", "5", "--json", "--seed", "5", "--renders", "4", "--no-sync", "--platform-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var sum demo.Summary
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("stdout is not a summary: %v\n%s", err, stdout)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Errorf("stdout holds more than the summary: %v", err)
	}
	if sum.Violations != 0 || sum.Seed != 5 || sum.Concurrency != 4 || sum.Publishes.Total < 2 || sum.RenderCounts.Total == 0 {
		t.Errorf("summary %+v: want 0 violations, seed 5, 4 concurrent renders, publishes and renders done", sum)
	}
	if sum.Renders != sum.RenderCounts.Total {
		t.Errorf("summary's renders %d, want the count of renders done, %d", sum.Renders, sum.RenderCounts.Total)
	}
	p := sum.Publishes
	if p.Total != p.Published+p.Unchanged+p.Changed+p.BuildFailed+p.Stale+p.Failed+p.Cancelled {
		t.Errorf("publishes %+v: the total is not the sum of the outcomes", p)
	}
	if !strings.Contains(stderr, "generation") {
		t.Errorf("no progress on stderr with --json: %q", stderr)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a named platform directory is removed at exit: %v", err)
	}
}

func TestMainText(t *testing.T) {
	code, stdout, stderr := runArgs(t, "--generations", "8", "--publish-every", "10ms", "--no-sync")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"publishes", "expected failure", "render latency", "publish latency", "reclaim delay", "leases", "\nviolations: 0\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\r") {
		t.Error("a status line was redrawn in place on a buffer, not a terminal")
	}
	dir := strings.Fields(strings.SplitN(stdout, " to ", 2)[1])[0]
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary platform directory %s outlives the run: %v", dir, err)
	}
}

func TestMainKeep(t *testing.T) {
	code, stdout, stderr := runArgs(t, "--generations", "2", "--publish-every", "10ms", "--no-sync", "--keep")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, dir, ok := strings.Cut(strings.TrimSpace(stderr), "kept the platform directory ")
	if !ok {
		t.Fatalf("--keep does not say where: %q", stderr)
	}
	defer os.RemoveAll(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var gens []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "gen-") {
			gens = append(gens, e.Name())
		}
	}
	if len(gens) != 1 || gens[0] != "gen-2" {
		t.Errorf("the kept directory holds generations %v, want the current one, gen-2", gens)
	}
}

func TestMainHelpMentionsEveryFlag(t *testing.T) {
	code, stdout, stderr := runArgs(t, "-h")
	if code != 0 || stdout != "" {
		t.Errorf("-h: exit %d, stdout %q", code, stdout)
	}
	for _, flag := range []string{"duration", "generations", "seed", "renders", "publish-every", "platform-dir", "keep", "no-sync", "json", "render"} {
		if !strings.Contains(stderr, "  -"+flag+" ") && !strings.Contains(stderr, "  -"+flag+"\n") {
			t.Errorf("-h does not explain -%s:\n%s", flag, stderr)
		}
	}
	if !strings.Contains(stderr, "Usage: go run ./examples/operator") || !strings.Contains(stderr, "timing still varies") {
		t.Errorf("-h lacks the usage paragraph or the seed's limit:\n%s", stderr)
	}
}

func TestMainRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--renders", "0"}, "--renders 0"},
		{[]string{"--duration", "-1s"}, "--duration -1s"},
		{[]string{"--generations", "-3"}, "--generations -3"},
		{[]string{"--duration", "0"}, "never end"},
		{[]string{"--publish-every", "0s"}, "--publish-every 0s"},
		{[]string{"--keep", "--platform-dir", "/somewhere"}, "always kept"},
		{[]string{"extra"}, `"extra"`},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--render-timeout", "0s"}, "--render-timeout 0s: must be positive"},
		{[]string{"--render-timeout", "2"}, "a duration needs a unit"},
		{[]string{"--render-memory", "1MiB"}, "--render-memory 1MiB: must be at least 32MiB"},
		{[]string{"--render-memory", "lots"}, "not a size"},
		{[]string{"--in-process", "--render-timeout", "2s"}, "budgets are kept by worker processes only"},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, stdout, stderr, exitUsage, tc.want)
		}
	}
}

func TestMainRefusesADirectoryItDoesNotOwn(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(precious, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runArgs(t, "--platform-dir", dir, "--duration", "1s")
	if code != exitUsage || !strings.Contains(stderr, dir) {
		t.Errorf("exit %d, stderr %q: want %d and the directory named", code, stderr, exitUsage)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "mine" {
		t.Errorf("the directory's file is gone or changed: %q, %v", data, err)
	}
}

// writeInstance writes an embedded instance module into a new directory.
func writeInstance(t *testing.T, name string, edit func(map[string][]byte)) string {
	t.Helper()
	inst, err := demo.LookupInstance(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(inst.Files)
	}
	dir := t.TempDir()
	for p, data := range inst.Files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMainRenderPrintsYAML(t *testing.T) {
	dir := writeInstance(t, "shop", nil)
	code, stdout, stderr := runArgs(t, "--render", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	docs := strings.Split(stdout, "---\n")
	if len(docs) != 3 {
		t.Fatalf("%d YAML documents, want 3 (api, frontend, public):\n%s", len(docs), stdout)
	}
	var names []string
	for _, doc := range docs {
		var obj struct {
			Kind     string
			Metadata struct {
				Name   string
				Labels map[string]string
			}
		}
		if err := yaml.UnmarshalStrict([]byte(doc), &obj); err != nil && !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		yaml.Unmarshal([]byte(doc), &obj)
		names = append(names, obj.Kind+" "+obj.Metadata.Name)
		if obj.Metadata.Labels["platform.leasekit.dev/name"] != demo.PlatformName {
			t.Errorf("%s lacks the platform's label: %v", obj.Metadata.Name, obj.Metadata.Labels)
		}
	}
	if got := strings.Join(names, ", "); got != "Deployment shop-api, Deployment shop-frontend, Service shop-public" {
		t.Errorf("rendered %s", got)
	}
}

func TestMainRenderReportsSkewAsTheKernelDoes(t *testing.T) {
	dir := writeInstance(t, "events", nil) // requires queue v1.3.0; the default carries v1.2.0
	code, stdout, stderr := runArgs(t, "--render", dir)
	if code != 0 || !strings.Contains(stdout, "kind: Queue") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "example.com/catalogs/queue@v1") {
		t.Errorf("no skew warning naming the catalog on stderr: %q", stderr)
	}
}

func TestMainRenderReportsErrorsWithPositions(t *testing.T) {
	dir := writeInstance(t, "shop", func(files map[string][]byte) {
		files["shop.cue"] = bytes.Replace(files["shop.cue"], []byte("replicas: 3"), []byte(`replicas: "three"`), 1)
	})
	code, stdout, stderr := runArgs(t, "--render", dir)
	if code != exitViolation || stdout != "" {
		t.Errorf("exit %d, stdout %q: want %d and nothing", code, stdout, exitViolation)
	}
	if !strings.Contains(stderr, "shop.cue:") || !strings.Contains(stderr, "replicas") {
		t.Errorf("the error does not point at shop.cue:line:col and the field: %q", stderr)
	}
}

func TestMainRenderJSON(t *testing.T) {
	dir := writeInstance(t, "ledger", nil)
	code, stdout, stderr := runArgs(t, "--render", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	var out struct {
		Instance   string
		Generation int64
		Resources  []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if out.Instance != "ledger" || out.Generation != 1 || len(out.Resources) != 2 {
		t.Errorf("rendered %+v", out)
	}
}

// A --render directory that is missing, or not a directory, is an
// unusable directory: exit 2, as -h says, naming it, with nothing on
// stdout, also with --json.
func TestMainRenderOfAMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	file := filepath.Join(t.TempDir(), "shop.cue")
	if err := os.WriteFile(file, []byte("package shop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{missing, "--render " + missing + ": no such file or directory"},
		{file, "--render " + file + ": not a directory"},
	} {
		for _, args := range [][]string{{"--render", tc.dir}, {"--render", tc.dir, "--json"}} {
			code, stdout, stderr := runArgs(t, args...)
			if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, nothing on stdout and %q", args, code, stdout, stderr, exitUsage, tc.want)
			}
		}
	}
}

// With --json, a render error is one object: "error" on one line that
// does not end in the count's colon, and "problems" with one entry per
// problem, its other positions on the same entry, never an entry of its
// own.
func TestMainRenderJSONErrorListsEachProblemOnce(t *testing.T) {
	dir := writeInstance(t, "shop", func(files map[string][]byte) {
		files["shop.cue"] = bytes.Replace(files["shop.cue"], []byte("replicas: 3"), []byte(`replicas: "three"`), 1)
		files["shop.cue"] = bytes.Replace(files["shop.cue"], []byte("replicas: 2"), []byte(`replicas: "two"`), 1)
	})
	code, stdout, stderr := runArgs(t, "--render", dir, "--json")
	if code != exitViolation {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitViolation, stderr)
	}
	var out jsonError
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(out.Problems) != 2 {
		t.Errorf("problems %q, want the two replicas, one entry each", out.Problems)
	}
	for _, p := range out.Problems {
		if !strings.HasPrefix(p, "shop.cue:") || !strings.Contains(p, "replicas") || strings.Contains(p, "\n") {
			t.Errorf("problem %q: want one line, shop.cue:line:col first, naming the field", p)
		}
	}
	if strings.HasSuffix(out.Error, ":") || strings.Contains(out.Error, "\n") || !strings.Contains(out.Error, "2 problems") {
		t.Errorf("error %q: want one line counting the problems, not ending in a colon", out.Error)
	}
}

func TestMainRenderRefusesALinkLeadingOut(t *testing.T) {
	dir := writeInstance(t, "shop", nil)
	secret := filepath.Join(t.TempDir(), "secret.cue")
	if err := os.WriteFile(secret, []byte("package shop\nsecret: \"s3cr3t\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "leak.cue")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	code, stdout, stderr := runArgs(t, "--render", dir)
	if code != exitViolation || stdout != "" {
		t.Errorf("exit %d, stdout %q: want %d and nothing", code, stdout, exitViolation)
	}
	// Read through the link, the file would add a field the instance
	// schema refuses: "secret: field not allowed".
	if !strings.Contains(stderr, "leak.cue") || strings.Contains(stderr, "secret") || strings.Contains(stdout+stderr, "s3cr3t") {
		t.Errorf("stderr %q: want the link named and nothing read through it", stderr)
	}
}

// runCtx is runArgs with the context the command runs under.
func runCtx(ctx context.Context, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// An interrupt (its context ends) counts the publish it stopped as
// cancelled, not failed, and exits 130.
func TestMainInterruptIsCancelledAndExits130(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the first publish is interrupted
	code, stdout, stderr := runCtx(ctx, "--json", "--seed", "3", "--no-sync", "--renders", "2")
	if code != exitInterrupt {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInterrupt, stdout, stderr)
	}
	var sum demo.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout is not a summary: %v\n%s", err, stdout)
	}
	if p := sum.Publishes; !sum.Interrupted || p.Failed != 0 || p.Cancelled != 1 || p.Total != 1 {
		t.Errorf("interrupted %v, publishes %+v: want interrupted, 1 cancelled and 0 failed", sum.Interrupted, p)
	}

	code, stdout, _ = runCtx(ctx, "--seed", "3", "--no-sync", "--renders", "2")
	if code != exitInterrupt || !strings.Contains(stdout, "0 failed, 1 cancelled") || !strings.Contains(stdout, "violations: 0 (interrupted") {
		t.Errorf("text: exit %d, summary:\n%s\nwant %d, the publish cancelled, and the violations line saying the run was interrupted", code, stdout, exitInterrupt)
	}
}

// Every refused flag gets the same two lines on stderr, never the whole
// usage; a duration without a unit says it needs one.
func TestMainBadFlagsAreTwoLines(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--duration", "5"}, "a duration needs a unit, such as 5s"},
		{[]string{"--publish-every", "10"}, "a duration needs a unit, such as 10s"},
		{[]string{"--duration", "soon"}, "not a duration, such as 5s"},
		{[]string{"--renders", "0"}, "--renders 0"},
	} {
		code, stdout, stderr := runArgs(t, tc.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != exitUsage || stdout != "" || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || lines[1] != "Run with -h for the flags." || !strings.HasPrefix(lines[0], "operator: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d and two lines, the first with %q", tc.args, code, stdout, stderr, exitUsage, tc.want)
		}
	}
}

// -h states each default once.
func TestMainHelpStatesDefaultsOnce(t *testing.T) {
	_, _, stderr := runArgs(t, "-h")
	for line := range strings.Lines(stderr) {
		if strings.Count(line, "default") > 1 {
			t.Errorf("-h says default twice: %q", line)
		}
	}
	if !strings.Contains(stderr, "GOMAXPROCS x 4") {
		t.Errorf("-h does not say how --renders defaults:\n%s", stderr)
	}
}

// A refused platform directory is refused before the run says it is
// publishing there, with the fix.
func TestMainRefusesADirectoryBeforePublishing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runArgs(t, "--platform-dir", dir, "--duration", "1s")
	if code != exitUsage || stdout != "" {
		t.Errorf("exit %d, stdout %q: want %d and nothing printed", code, stdout, exitUsage)
	}
	if !strings.Contains(stderr, "empty or new directory") {
		t.Errorf("stderr %q does not suggest the fix", stderr)
	}
}

// --render with --json prints a JSON error object on stdout for a render
// that fails.
func TestMainRenderJSONError(t *testing.T) {
	dir := writeInstance(t, "shop", func(files map[string][]byte) {
		files["shop.cue"] = bytes.Replace(files["shop.cue"], []byte("replicas: 3"), []byte(`replicas: "three"`), 1)
	})
	code, stdout, stderr := runArgs(t, "--render", dir, "--json")
	if code != exitViolation {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitViolation, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var got struct {
		Instance   string   `json:"instance"`
		Generation int64    `json:"generation"`
		Error      string   `json:"error"`
		Problems   []string `json:"problems"`
	}
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not a JSON error object: %v\n%s", err, stdout)
	}
	if got.Instance != dir || got.Generation != 1 || !strings.Contains(got.Error, "rendering") || len(got.Problems) == 0 || !strings.Contains(strings.Join(got.Problems, "\n"), "shop.cue:") {
		t.Errorf("error object %+v: want the instance, generation 1, the error and its problems with positions", got)
	}
}
