package isolate_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// TestMain serves as a kernel worker when the Workers of a test start this
// binary as one. KERNEL_TEST_NO_WORKER makes it a binary that does not.
func TestMain(m *testing.M) {
	if os.Getenv("KERNEL_TEST_NO_WORKER") == "" {
		isolate.MainGarbage()
		isolate.Main()
	}
	// Each sequence of the property tests starts worker processes, a
	// good part of a second each under the race detector: fewer run
	// unless -rapid.checks says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set && flag.Lookup("rapid.checks") != nil {
		if err := flag.Set("rapid.checks", "10"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// newWorkers returns Workers that the test closes when it ends.
func newWorkers(t testing.TB, ws *isolate.Workers) *isolate.Workers {
	t.Helper()
	t.Cleanup(func() { ws.Close() })
	return ws
}

// The bombs: instance bodies, each a few bytes, whose evaluation takes
// CUE tens of seconds and up to gigabytes.
var bombs = []struct{ name, body string }{
	{"list", `x: [for i in list.Range(0, 200000, 1) {i}]`},
	{"components", `components: {for i in list.Range(0, 100000, 1) {"c\(i)": {kind: "Service", catalog: "` + moduletest.WebPath + `"}}}`},
	{"nested", `a: {for i in list.Range(0,3000,1) {"f\(i)": [for j in list.Range(0,3000,1) {j}]}}`},
}

// spin is an instance body that never ends on any machine (ten billion
// steps) and holds little memory while it runs (a few hundred MiB after
// ten seconds, with the race detector): a test that stops a call by its
// ctx, a kill or Close uses it, with the memory budget out of its reach,
// so that no budget can end the call first.
const spin = `r: list.Range(0, 100000, 1)
x: [for i in r for j in r if i < 0 {i}]`

// bombInstance returns the instance module of a bomb body.
func bombInstance(body string) kernel.Instance {
	return kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte(moduletest.InstanceModule),
		"shop.cue": []byte("package shop\n\nimport \"list\"\n\nname: \"shop\"\nrequires: \"" + moduletest.WebPath + "\": \"v1.0.0\"\n" +
			body + "\n"),
	}}
}

// sameResult fails the test unless both outputs and both errors are
// equal: the errors by type, fields and text.
func sameResult(t testing.TB, what string, got, want any, gotErr, wantErr error) {
	t.Helper()
	if !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%s: in a worker: %v (%#v)\nin process: %v (%#v)", what, gotErr, gotErr, wantErr, wantErr)
	}
	if gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: in a worker: %q\nin process: %q", what, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: in a worker:\n%#v\nin process:\n%#v", what, got, want)
	}
}

// TestWorkersMatchInProcess: builds and renders through workers give
// what they give in-process, results and errors alike, positions
// included, for every kind of outcome.
func TestWorkersMatchInProcess(t *testing.T) {
	ctx := context.Background()
	ws := newWorkers(t, &isolate.Workers{Size: 2})
	inproc, isolated := kernel.New(), ws

	bad := moduletest.WriteModule(t, moduletest.PlatformModule(`name: "Acme"
catalogs: "x": {version: 1}
`))
	good := moduletest.Generated(t, moduletest.Acme)
	limited := moduletest.Generated(t, moduletest.Acme)
	for _, dir := range []string{good, bad, limited, filepath.Join(good, "missing")} {
		p, err := isolated.BuildPlatform(ctx, dir)
		q, qerr := inproc.BuildPlatform(ctx, dir)
		sameResult(t, "build "+dir, p, q, err, qerr)
	}
	small := &kernel.Kernel{Limits: kernel.Limits{MaxFileSize: 64}}
	smallIsolated := newWorkers(t, &isolate.Workers{Kernel: small, Size: 2})
	p, err := smallIsolated.BuildPlatform(ctx, limited)
	q, qerr := small.BuildPlatform(ctx, limited)
	sameResult(t, "build past a limit", p, q, err, qerr)

	platform, err := inproc.BuildPlatform(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	changed := moduletest.Generated(t, moduletest.Acme)
	changedPlatform, err := inproc.BuildPlatform(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(changed, "extra.cue"), []byte("package platform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirInstance := map[string]string{}
	for k, v := range moduletest.Instance(`name: "shop"
requires: "` + moduletest.BatchPath + `": "v2.0.0"
components: nightly: {kind: "CronJob", catalog: "` + moduletest.BatchPath + `", replicas: "two"}`) {
		dirInstance[k] = string(v)
	}
	cases := map[string]kernel.RenderInput{
		"ten components":   moduletest.Shop(platform, "v1.0.0", 10),
		"skew warned":      moduletest.Shop(platform, "v1.9.0", 2),
		"skew refused":     {Platform: platform, Instance: moduletest.Shop(platform, "v1.9.0", 2).Instance, Skew: kernel.SkewRefuse},
		"not carried":      {Platform: platform, Instance: kernel.Instance{Files: moduletest.Instance(`name: "shop"` + "\n" + `requires: "example.com/x@v1": "v1.0.0"`)}},
		"disabled":         {Platform: platform, Instance: kernel.Instance{Files: moduletest.Instance(`name: "shop"` + "\nrequires: \"" + moduletest.DBPath + `": "v0.1.0"`)}},
		"schema problems":  {Platform: platform, Instance: kernel.Instance{Files: moduletest.Instance(`name: "Shop"` + "\nrequires: \"" + moduletest.WebPath + `": "v1.0.0"` + "\ncomponents: web: {kind: 3, catalog: \"" + moduletest.WebPath + `"}`)}},
		"syntax":           {Platform: platform, Instance: kernel.Instance{Files: moduletest.Instance(`name: "shop`)}},
		"from a directory": {Platform: platform, Instance: kernel.Instance{Dir: moduletest.WriteModule(t, dirInstance)}},
		"no such dir":      {Platform: platform, Instance: kernel.Instance{Dir: filepath.Join(good, "nowhere")}},
		"changed":          {Platform: changedPlatform, Instance: moduletest.Shop(changedPlatform, "v1.0.0", 1).Instance},
		"no platform":      {Instance: moduletest.Shop(platform, "v1.0.0", 1).Instance},
		"no instance":      {Platform: platform},
		"both":             {Platform: platform, Instance: kernel.Instance{Dir: good, Files: moduletest.Instance(`name: "shop"`)}},
	}
	for name, in := range cases {
		out, err := isolated.Render(ctx, in)
		want, wantErr := inproc.Render(ctx, in)
		sameResult(t, name, out, want, err, wantErr)
	}
	components := &kernel.Kernel{Limits: kernel.Limits{MaxComponents: 3}}
	out, err := newWorkers(t, &isolate.Workers{Kernel: components, Size: 1}).Render(ctx, moduletest.Shop(platform, "v1.0.0", 4))
	want, wantErr := components.Render(ctx, moduletest.Shop(platform, "v1.0.0", 4))
	sameResult(t, "past MaxComponents", out, want, err, wantErr)
	if wantErr == nil {
		t.Fatal("past MaxComponents: rendered")
	}
	if s := ws.Stats(); s.Started == 0 || s.Started > 2 || s.Calls == 0 || s.Crashed+s.KilledTime+s.KilledMemory != 0 {
		t.Fatalf("stats %+v: want at most 2 workers started, none lost", s)
	}
}

// TestWorkersBombs: each bomb, and a platform module doing the same, fails
// with the budget error, while renders of a good instance through the same
// Workers succeed; the process that asked grows by less than 64 MiB.
func TestWorkersBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("each bomb takes a budget")
	}
	ctx := context.Background()
	// Either budget may stop a bomb: within the memory budget each runs
	// for tens of seconds. The time budget is ten times what a good
	// render beside the bombs takes on a loaded machine, a cold worker's
	// start included.
	const timeout, memory = 5 * time.Second, 256 << 20
	ws := newWorkers(t, &isolate.Workers{Size: 2, Timeout: timeout, Memory: memory})
	k := ws
	dir := moduletest.Generated(t, moduletest.Acme)
	p, err := k.BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before, haveRSS := selfRSS()

	stop := make(chan struct{})
	var good sync.WaitGroup
	var goodRenders int
	var goodErr error
	good.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 3)); err != nil {
				goodErr = err
				return
			}
			goodRenders++
		}
	})

	check := func(name, op, wantDir string, call func() error) {
		start := time.Now()
		err := call()
		took := time.Since(start)
		var be *isolate.BudgetError
		if !errors.As(err, &be) || !errors.Is(err, isolate.ErrBudget) {
			t.Fatalf("%s: %v, want a *isolate.BudgetError", name, err)
		}
		if be.Op != op || be.Dir != wantDir || (be.Budget == "time") != (be.Value == int64(timeout)) ||
			(be.Budget == "memory") != (be.Value == memory) || !strings.Contains(err.Error(), be.Budget+" budget") {
			t.Fatalf("%s: %#v (%v)", name, be, err)
		}
		t.Logf("%s: %v after %v", name, err, took.Round(time.Millisecond))
	}
	for _, b := range bombs {
		check(b.name, "render", "instance", func() error {
			_, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: bombInstance(b.body)})
			return err
		})
	}
	overlay := moduletest.Generated(t, moduletest.Acme)
	if err := os.WriteFile(filepath.Join(overlay, "overlay.cue"),
		[]byte("package platform\n\nimport \"list\"\n\n"+bombs[2].body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("platform overlay", "build", overlay, func() error {
		_, err := k.BuildPlatform(ctx, overlay)
		return err
	})
	close(stop)
	good.Wait()
	if goodErr != nil {
		t.Fatalf("a good render beside the bombs: %v", goodErr)
	}
	if goodRenders == 0 {
		t.Fatal("no good render ran beside the bombs")
	}
	runtime.GC()
	if after, ok := selfRSS(); haveRSS && ok && after-before >= 64<<20 {
		t.Fatalf("the process grew by %d MiB during the bombs", (after-before)>>20)
	}
	s := ws.Stats()
	if s.KilledTime+s.KilledMemory != 4 || s.Crashed != 0 {
		t.Fatalf("stats %+v: want 4 workers killed by budget, none crashed", s)
	}
	t.Logf("%d good renders beside the bombs; stats %+v", goodRenders, s)
}

// selfRSS returns the resident memory of this process, where it can be
// read.
func selfRSS() (int64, bool) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	n, err := strconv.ParseInt(f[1], 10, 64)
	return n * int64(os.Getpagesize()), err == nil
}

// TestWorkersMemoryBudget: a worker past its memory budget is killed, the
// call fails naming the memory budget, and the next call gets a fresh
// worker.
func TestWorkersMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("a bomb")
	}
	ctx := context.Background()
	ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 128 << 20})
	k := ws
	p := moduletest.Build(t)
	_, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: bombInstance(bombs[2].body)})
	var be *isolate.BudgetError
	if !errors.As(err, &be) || be.Budget != "memory" || be.Value != 128<<20 {
		t.Fatalf("%v, want the memory budget", err)
	}
	if !strings.Contains(err.Error(), "memory budget of 128MiB (Workers.Memory)") {
		t.Fatalf("%q does not name the budget", err)
	}
	if _, err := k.Render(ctx, moduletest.Shop(p, "v1.0.0", 2)); err != nil {
		t.Fatal(err)
	}
	if s := ws.Stats(); s.KilledMemory != 1 || s.Started != 2 || s.Restarts != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkersContext: a render whose ctx ends is stopped, its worker
// killed, and the call returns ctx.Err(); the next call gets a fresh
// worker.
func TestWorkersContext(t *testing.T) {
	ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 8 << 30})
	k := ws
	p := moduletest.Build(t)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for ws.Stats().Busy == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: bombInstance(spin)})
	if err != context.Canceled {
		t.Fatalf("%v, want context.Canceled", err)
	}
	if _, err := k.Render(context.Background(), moduletest.Shop(p, "v1.0.0", 1)); err != nil {
		t.Fatal(err)
	}
	if s := ws.Stats(); s.Cancelled != 1 || s.Started != 2 {
		t.Fatalf("stats %+v", s)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	if _, err := k.Render(dctx, kernel.RenderInput{Platform: p, Instance: bombInstance(spin)}); err != context.DeadlineExceeded {
		t.Fatalf("%v, want context.DeadlineExceeded", err)
	}
}

// TestWorkersRecycle: a worker answers Calls calls, then a fresh one
// takes its place.
func TestWorkersRecycle(t *testing.T) {
	ws := newWorkers(t, &isolate.Workers{Size: 1, Calls: 2})
	k := ws
	p := moduletest.Build(t)
	for range 5 {
		if _, err := k.Render(context.Background(), moduletest.Shop(p, "v1.0.0", 1)); err != nil {
			t.Fatal(err)
		}
	}
	if s := ws.Stats(); s.Recycled != 2 || s.Started != 3 || s.Restarts != 2 || s.Calls != 5 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkersRefuseBadConfiguration: each field out of range is refused,
// by name, in the package's voice, before any worker starts.
func TestWorkersRefuseBadConfiguration(t *testing.T) {
	p := moduletest.Build(t)
	for _, c := range []struct {
		ws   *isolate.Workers
		want string
	}{
		{&isolate.Workers{Size: -1}, "isolate: Workers.Size is -1"},
		{&isolate.Workers{Timeout: -time.Second}, "isolate: Workers.Timeout is -1s"},
		{&isolate.Workers{Memory: 1 << 20}, "isolate: Workers.Memory is 1048576 bytes: must be at least 32MiB"},
		{&isolate.Workers{Calls: -2}, "isolate: Workers.Calls is -2"},
	} {
		_, err := c.ws.Render(context.Background(), moduletest.Shop(p, "v1.0.0", 1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ws, err, c.want)
		}
		if s := c.ws.Stats(); s.Started != 0 {
			t.Errorf("%+v: started a worker", c.ws)
		}
	}
}

// TestWorkersNotServed: an executable that does not call Main fails
// the call with an error that says so.
func TestWorkersNotServed(t *testing.T) {
	t.Setenv("KERNEL_TEST_NO_WORKER", "1")
	ws := newWorkers(t, &isolate.Workers{Size: 1})
	_, err := ws.BuildPlatform(context.Background(), t.TempDir())
	var we *isolate.WorkerError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "call isolate.Main first") {
		t.Fatalf("%v, want a *isolate.WorkerError naming Main", err)
	}
}

// TestWorkersCloseStopsCallsInFlight: Close kills a busy worker, its call
// fails with ErrClosed, saying so once, and Close returns once the worker
// is gone.
func TestWorkersCloseStopsCallsInFlight(t *testing.T) {
	p := moduletest.Build(t)
	ws := &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 8 << 30}
	k := ws
	errc := make(chan error, 1)
	go func() {
		_, err := k.Render(context.Background(), kernel.RenderInput{Platform: p, Instance: bombInstance(spin)})
		errc <- err
	}()
	for ws.Stats().Busy == 0 {
		time.Sleep(time.Millisecond)
	}
	ws.Close()
	if s := ws.Stats(); s.Running != 0 {
		t.Fatalf("after Close: %+v", s)
	}
	var we *isolate.WorkerError
	if err := <-errc; !errors.As(err, &we) || !errors.Is(err, isolate.ErrClosed) ||
		err.Error() != "isolate: render instance: workers closed" {
		t.Fatalf("%v, want a *isolate.WorkerError wrapping ErrClosed", err)
	}
}

// TestWorkersUnreadableAnswer: a worker that answers with a frame the pool
// cannot read, and stays alive, is killed at once and its call fails
// naming the frame, counted as crashed; it does not hold its slot until
// the time budget.
func TestWorkersUnreadableAnswer(t *testing.T) {
	for garbage, want := range map[string]string{"1": "the call's frames", "output": "more than the bytes left hold"} {
		t.Run(garbage, func(t *testing.T) {
			t.Setenv(isolate.GarbageEnv, garbage)
			ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 1 << 30})
			_, err := ws.BuildPlatform(context.Background(), t.TempDir())
			var we *isolate.WorkerError
			if !errors.As(err, &we) || !strings.Contains(err.Error(), "the call's frames") || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v, want a *WorkerError naming the call's frames and %q", err, want)
			}
			if st := ws.Stats(); st.Crashed != 1 || st.KilledTime != 0 {
				t.Errorf("Stats %+v, want one crashed and none killed past the time budget", st)
			}
		})
	}
}

// TestWorkersEndBeforeAcknowledgement: a call whose workers each end
// before they acknowledge its request goes to a fresh worker, three in
// all, and then fails as a call whose worker ended does, with a
// *WorkerError saying how the last one ended.
func TestWorkersEndBeforeAcknowledgement(t *testing.T) {
	t.Setenv(isolate.NoAckEnv, "1")
	ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 1 << 30})
	_, err := ws.BuildPlatform(context.Background(), t.TempDir())
	var we *isolate.WorkerError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "ended before it answered: exit status 3") {
		t.Fatalf("%v, want a *WorkerError saying the worker exited with status 3", err)
	}
	if st := ws.Stats(); st.Started != 3 || st.Restarts != 2 || st.Crashed != 3 || st.Running > 1 {
		t.Errorf("Stats %+v, want three workers started and crashed", st)
	}
}

// TestWorkersSlowExitPastMemory: a worker past its memory budget whose
// exit comes long after it closed its output (a loaded machine) fails its
// call with the memory budget, however long the exit took, not as a
// crash.
func TestWorkersSlowExitPastMemory(t *testing.T) {
	t.Setenv(isolate.SlowMemoryExitEnv, "2s")
	ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 1 << 30})
	_, err := ws.BuildPlatform(context.Background(), t.TempDir())
	var be *isolate.BudgetError
	if !errors.As(err, &be) || be.Budget != "memory" {
		t.Fatalf("%v, want the memory budget", err)
	}
	if st := ws.Stats(); st.KilledMemory != 1 || st.Crashed != 0 {
		t.Errorf("Stats %+v, want one past the memory budget and none crashed", st)
	}
}

// TestWorkersCtxEndsWaitForExit: a call waiting for a worker that closed
// its output to exit returns ctx.Err() once ctx ends, and the worker is
// killed.
func TestWorkersCtxEndsWaitForExit(t *testing.T) {
	t.Setenv(isolate.SlowMemoryExitEnv, "1h")
	ws := newWorkers(t, &isolate.Workers{Size: 1, Timeout: time.Hour, Memory: 1 << 30})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := ws.BuildPlatform(ctx, t.TempDir()); err != context.DeadlineExceeded {
		t.Fatalf("%v, want ctx.Err()", err)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if st := ws.Stats(); st.Running != 0 {
		t.Errorf("Stats %+v, want no worker running once closed", st)
	}
}
