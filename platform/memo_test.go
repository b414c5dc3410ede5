package platform_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// published returns a booted Publisher with opts and generation 1 of
// moduleFiles published.
func published(t *testing.T, opts platform.PublisherOptions) *platform.Publisher {
	t.Helper()
	p := newBooted(t, opts)
	if _, err := p.Publish(context.Background(), 1, moduletest.Variant(0), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	return p
}

// sizedInstance is renderInstance with a data file of n bytes beside it,
// so that its weight for admission is about n, and a label naming i, so
// that instances differ.
func sizedInstance(t *testing.T, i, n int) kernel.Instance {
	inst := renderInstance(t)
	inst.Files["shop.cue"] = fmt.Appendf(inst.Files["shop.cue"], "labels: i: \"%d\"\n", i)
	inst.Files["pad.json"] = []byte("\"" + strings.Repeat("x", n) + "\"")
	return inst
}

// A stub evaluation, for tests that control when renders end.
type stubEval struct {
	calls   atomic.Int64
	running atomic.Int64 // weight of the evaluations running
	peak    atomic.Int64
	cap     int64
	plat    int64 // the platform's size, for the weight
	gate    chan struct{}
}

func (s *stubEval) eval(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	s.calls.Add(1)
	w := min(in.Snapshot.Size()+s.plat, s.cap)
	n := s.running.Add(w)
	for {
		m := s.peak.Load()
		if n <= m || s.peak.CompareAndSwap(m, n) {
			break
		}
	}
	defer s.running.Add(-w)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return kernel.RenderOutput{}, ctx.Err()
		}
	} else {
		time.Sleep(time.Duration(1+in.Snapshot.Size()%7) * time.Millisecond)
	}
	return kernel.RenderOutput{Instance: "shop", Resources: []kernel.Resource{{Component: "web", Kind: "Deployment", Name: "shop-web", Object: map[string]any{"kind": "Deployment"}}}}, nil
}

// 64 renders of mixed weights, some heavier than the capacity, run at once
// under a small admission capacity: the weight admitted never exceeds it,
// every render ends, and some waited.
func TestAdmissionBoundsConcurrentRenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity = 8 << 10
		p := published(t, platform.PublisherOptions{AdmissionCapacity: capacity})
		rec, _ := p.Store().Generated()
		stub := &stubEval{cap: capacity, plat: rec.Platform.Size()}
		p.SetEval(stub.eval)
		var wg sync.WaitGroup
		errs := make([]error, 64)
		for i := range 64 {
			wg.Go(func() {
				_, _, errs[i] = p.Render(context.Background(), sizedInstance(t, i, []int{100, 1 << 10, 3 << 10, 10 << 10}[i%4]))
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("render %d: %v", i, err)
			}
		}
		st := p.Stats().Admission
		if peak := stub.peak.Load(); peak > capacity || peak == 0 {
			t.Errorf("admitted %d bytes at once, capacity %d", peak, capacity)
		}
		if stub.calls.Load() != 64 || st.Waits == 0 || st.Admitted != 0 || st.Running != 0 || st.Waiting != 0 || st.Capacity != capacity {
			t.Errorf("%d evaluations, admission %+v", stub.calls.Load(), st)
		}
	})
}

// A render waiting for admission returns ctx.Err() as soon as ctx is
// cancelled, admitting nothing, while the render that holds the capacity
// runs on; a memo hit never waits.
func TestAdmissionWaitEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity = 4 << 10
		p := published(t, platform.PublisherOptions{AdmissionCapacity: capacity})
		rec, _ := p.Store().Generated()
		stub := &stubEval{cap: capacity, plat: rec.Platform.Size(), gate: make(chan struct{})}
		p.SetEval(stub.eval)

		// A hit to be: rendered before the capacity is taken.
		close(stub.gate)
		light := sizedInstance(t, 0, 10)
		if _, _, err := p.Render(context.Background(), light); err != nil {
			t.Fatal(err)
		}
		stub.gate = make(chan struct{})

		heavy := make(chan error, 1)
		go func() { _, _, err := p.Render(context.Background(), sizedInstance(t, 1, 8<<10)); heavy <- err }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		waiting := make(chan error, 1)
		go func() { _, _, err := p.Render(ctx, sizedInstance(t, 2, 10)); waiting <- err }()
		synctest.Wait()
		if st := p.Stats().Admission; st.Waiting != 1 || st.Running != 1 {
			t.Fatalf("admission %+v, want one running and one waiting", st)
		}
		if _, _, err := p.Render(context.Background(), light); err != nil {
			t.Fatalf("a hit while the capacity is held: %v", err)
		}
		cancel()
		synctest.Wait()
		select {
		case err := <-waiting:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled render returned %v", err)
			}
		default:
			t.Fatal("the cancelled render is still waiting")
		}
		if st := p.Stats().Admission; st.Waiting != 0 || st.Running != 1 {
			t.Fatalf("admission %+v after the cancellation", st)
		}
		close(stub.gate)
		if err := <-heavy; err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Admission.Admitted != 0 || st.Memo.Hits != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// Renders of one key that miss at once share one evaluation; one waiter's
// cancellation returns its ctx.Err() at once and fails no other; the last
// waiter's leaving cancels the evaluation.
func TestConcurrentMissesEvaluateOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := published(t, platform.PublisherOptions{})
		stub := &stubEval{cap: 1 << 30, gate: make(chan struct{})}
		var cancelled atomic.Int64
		p.SetEval(func(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
			out, err := stub.eval(ctx, in)
			if err != nil {
				cancelled.Add(1)
			}
			return out, err
		})
		inst := sizedInstance(t, 0, 10)

		ctxA, cancelA := context.WithCancel(context.Background())
		a, b := make(chan error, 1), make(chan error, 1)
		go func() { _, _, err := p.Render(ctxA, inst); a <- err }()
		go func() { _, _, err := p.Render(context.Background(), inst); b <- err }()
		synctest.Wait()
		cancelA()
		synctest.Wait()
		select {
		case err := <-a:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("the cancelled waiter returned %v", err)
			}
		default:
			t.Fatal("the cancelled waiter still waits")
		}
		if cancelled.Load() != 0 {
			t.Fatal("one waiter's leaving cancelled the evaluation another waits for")
		}
		close(stub.gate)
		if err := <-b; err != nil {
			t.Fatalf("the waiter that stayed: %v", err)
		}
		if n := stub.calls.Load(); n != 1 {
			t.Fatalf("%d evaluations of one key", n)
		}
		if st := p.Stats().Memo; st.Misses != 2 || st.Shared != 1 || st.Entries != 1 {
			t.Fatalf("memo %+v", st)
		}

		// Every waiter leaves: the evaluation is cancelled, nothing is
		// memoized, and the next render evaluates again.
		stub.gate = make(chan struct{})
		other := sizedInstance(t, 1, 10)
		ctxC, cancelC := context.WithCancel(context.Background())
		c := make(chan error, 1)
		go func() { _, _, err := p.Render(ctxC, other); c <- err }()
		synctest.Wait()
		cancelC()
		synctest.Wait()
		if err := <-c; !errors.Is(err, context.Canceled) {
			t.Fatalf("the last waiter returned %v", err)
		}
		if cancelled.Load() != 1 {
			t.Fatal("the evaluation ran on after its last waiter left")
		}
		close(stub.gate)
		if _, _, err := p.Render(context.Background(), other); err != nil {
			t.Fatal(err)
		}
		if n := stub.calls.Load(); n != 3 {
			t.Fatalf("%d evaluations, want 3", n)
		}
		if n := p.MemoFlights(); n != 0 {
			t.Fatalf("%d flights left", n)
		}
	})
}

// A render of a key whose evaluation its last waiter has just left, still
// ending with that waiter's cancellation, gets its own evaluation: it
// never sees another caller's context.Canceled.
func TestJoinerOfACancelledEvaluationRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := published(t, platform.PublisherOptions{})
		var calls atomic.Int64
		ended := make(chan struct{})
		p.SetEval(func(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
			if calls.Add(1) == 1 {
				defer close(ended)
				<-ctx.Done()
				time.Sleep(time.Second) // slow to notice
				return kernel.RenderOutput{}, ctx.Err()
			}
			return kernel.RenderOutput{Instance: "shop"}, nil
		})
		inst := sizedInstance(t, 0, 10)
		ctxA, cancelA := context.WithCancel(context.Background())
		a := make(chan error, 1)
		go func() { _, _, err := p.Render(ctxA, inst); a <- err }()
		synctest.Wait()
		cancelA()
		if err := <-a; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		out, _, err := p.Render(context.Background(), inst) // while the first evaluation ends
		if err != nil || out.Instance != "shop" {
			t.Fatalf("the render after the cancelled one: %+v, %v", out, err)
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d evaluations, want 2", n)
		}
		<-ended
	})
}

// A hit hands out a copy: a caller's changes to it reach no other render.
func TestMemoHitIsACopy(t *testing.T) {
	p := published(t, platform.PublisherOptions{})
	ctx := context.Background()
	first, _, err := p.Render(ctx, renderInstance(t))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := p.Render(ctx, renderInstance(t))
	scribble(first)
	for range 2 {
		got, _, err := p.Render(ctx, renderInstance(t))
		if err != nil || got.Resources[0].Object["metadata"].(map[string]any)["name"] != "shop-web" {
			t.Fatalf("a hit after a caller's scribbles: %+v, %v", got, err)
		}
		scribble(got)
	}
	if st := p.Stats().Memo; st.Hits != 3 || st.Misses != 1 || want.Resources[0].Name != "shop-web" {
		t.Fatalf("memo %+v", st)
	}
}

// An entry outlives the generation it was rendered against, when the
// next one changes nothing the render reads: the generation's reclaim
// drops nothing, and the next render hits.
func TestMemoEntriesOutliveTheirGeneration(t *testing.T) {
	p := published(t, platform.PublisherOptions{}) // generation 1: moduletest.Variant(0)
	ctx := context.Background()
	want, _, err := p.Render(ctx, renderInstance(t))
	if err != nil {
		t.Fatal(err)
	}
	files := moduletest.Variant(0)
	files["extra.cue"] = []byte("package platform\n\n_unread: 1\n") // a change the render does not read
	if _, err := p.Publish(ctx, 2, files, kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats().Memo; st.Entries != 1 || st.Dropped != 0 {
		t.Fatalf("memo %+v after generation 1 was reclaimed", st)
	}
	got, rec, err := p.Render(ctx, renderInstance(t))
	if err != nil || rec.Generation != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("render against generation %d: %+v, %v", rec.Generation, got, err)
	}
	if st := p.Stats().Memo; st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("memo %+v: the render against generation 2 evaluated", st)
	}
}

// A result that names the platform's directory (a label the platform and
// the instance set to different values, an error at both positions)
// serves only renders against that directory, and goes when it is
// reclaimed; its key equals no key Key computes.
func TestMemoDropsEntriesThatNameAReclaimedDirectory(t *testing.T) {
	p := published(t, platform.PublisherOptions{})
	ctx := context.Background()
	labelled := func(catalogs ...platformmodule.Catalog) platformmodule.Files {
		files, err := platformmodule.Generate(platformmodule.Input{Name: "acme", Labels: map[string]string{"team": "a"}, Catalogs: catalogs})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	web := platformmodule.Catalog{Path: "example.com/catalogs/web@v1", Version: "v1.0.0"}
	db := platformmodule.Catalog{Path: "example.com/catalogs/db@v2", Version: "v2.0.0"}
	inst := renderInstance(t)
	inst.Files["labels.cue"] = []byte("package shop\n\nlabels: team: \"b\"\n")
	if _, err := p.Publish(ctx, 2, labelled(web), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	rec, release, _ := p.Store().Lease()
	_, key, err := p.RenderLeased(ctx, rec, inst)
	release()
	if err == nil || !strings.Contains(err.Error(), rec.Dir) {
		t.Fatalf("render against generation 2: %v, want an error naming %s", err, rec.Dir)
	}
	if k, kerr := p.Key(ctx, rec, inst); kerr != nil || k == key {
		t.Fatalf("Key %v (%v) equals the key %v of a result that names the directory", k, kerr, key)
	}
	if st := p.Stats().Memo; st.Entries != 1 || st.Dropped != 0 {
		t.Fatalf("memo %+v after the render", st)
	}
	if _, err := p.Publish(ctx, 3, labelled(web, db), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats().Memo; st.Entries != 0 || st.Dropped != 1 {
		t.Fatalf("memo %+v after generation 2 was reclaimed: want its entry dropped", st)
	}
	_, rec3, err3 := p.Render(ctx, inst)
	if err3 == nil || !strings.Contains(err3.Error(), rec3.Dir) || strings.Contains(err3.Error(), rec.Dir+"/") {
		t.Fatalf("render against generation 3: %v, want an error naming %s alone", err3, rec3.Dir)
	}
	if st := p.Stats().Memo; st.Hits != 0 || st.Misses != 2 {
		t.Fatalf("memo %+v: a render against another directory hit", st)
	}
}

// What depends on the circumstances of a render is never memoized: a
// cancelled context, a platform directory that no longer holds what was
// built from it. Errors of the input's content are.
func TestMemoKeepsOnlyErrorsOfContent(t *testing.T) {
	p := published(t, platform.PublisherOptions{})
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := p.Render(cancelled, renderInstance(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled render: %v", err)
	}
	rec, _ := p.Store().Generated()
	file := filepath.Join(rec.Dir, "stray.cue")
	if err := os.WriteFile(file, []byte("package platform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Render(ctx, renderInstance(t)); !errors.As(err, new(*kernel.ContentError)) {
		t.Fatalf("a render against a changed directory: %v", err)
	}
	if st := p.Stats().Memo; st.Entries != 0 {
		t.Fatalf("memo %+v: a circumstantial error was kept", st)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Render(ctx, renderInstance(t)); err != nil {
		t.Fatalf("once the directory is restored: %v", err)
	}
	bad := renderInstance(t)
	bad.Files["shop.cue"] = append(bad.Files["shop.cue"], "name: 42\n"...)
	for range 2 {
		if _, _, err := p.Render(ctx, bad); !errors.As(err, new(*kernel.Error)) {
			t.Fatalf("a conflicting instance: %v", err)
		}
	}
	if st := p.Stats().Memo; st.Entries != 2 || st.Hits != 1 {
		t.Fatalf("memo %+v: the instance's own error is not kept", st)
	}
}

// A negative budget turns the memo off; renders still share evaluations.
func TestMemoOff(t *testing.T) {
	p := published(t, platform.PublisherOptions{MemoBudget: -1, AdmissionCapacity: -1})
	for range 3 {
		if _, _, err := p.Render(context.Background(), renderInstance(t)); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.Memo.Hits != 0 || st.Memo.Misses != 3 || st.Memo.Entries != 0 || st.Memo.Budget != 0 || st.Admission.Capacity != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// 100,000 distinct instances through a stub evaluation: the accounted
// bytes never pass the budget, and the heap grows by at most twice the
// budget.
func TestMemoStaysInBudget(t *testing.T) {
	const budget = 1 << 20
	p := published(t, platform.PublisherOptions{MemoBudget: budget})
	snap, err := kernel.New().ReadInstance(context.Background(), renderInstance(t))
	if err != nil {
		t.Fatal(err)
	}
	p.SetRead(func(context.Context, kernel.Instance) (*kernel.InstanceSnapshot, error) { return snap, nil })
	payload := strings.Repeat("x", 4000) // about the JSON of a render of ten components
	p.SetEval(func(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
		return kernel.RenderOutput{Instance: "shop", Resources: []kernel.Resource{{Component: "web", Kind: "Deployment", Name: "shop-web",
			Object: map[string]any{"spec": map[string]any{"image": payload + "y"}}}}}, nil
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx := context.Background()
	for i := range 100_000 {
		inst := kernel.Instance{Files: map[string][]byte{"shop.cue": []byte(strings.Repeat("i", 8) + fmt.Sprint(i))}}
		if _, _, err := p.Render(ctx, inst); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			if st := p.Stats().Memo; st.Bytes > budget {
				t.Fatalf("after %d instances: %d bytes accounted, budget %d", i+1, st.Bytes, budget)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := p.Stats().Memo
	if st.Bytes > budget || st.Evictions == 0 || st.Entries == 0 || st.Misses != 100_000 {
		t.Fatalf("memo %+v", st)
	}
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap growth %d bytes for a budget of %d (memo %+v)", growth, budget, st)
	if growth > 2*budget {
		t.Fatalf("the heap grew by %d bytes, more than twice the budget %d (memo %+v)", growth, budget, st)
	}
	if n, m := p.MemoFlights(), p.MemoPending(); n != 0 || m != 0 {
		t.Fatalf("%d flights and evaluations of %d identities left", n, m)
	}
}

// RenderLeased renders against the record the caller holds, through the
// same memo as Render, with the same key.
func TestRenderLeased(t *testing.T) {
	p := published(t, platform.PublisherOptions{})
	ctx := context.Background()
	want, _, err := p.Render(ctx, renderInstance(t))
	if err != nil {
		t.Fatal(err)
	}
	rec, release, _ := p.Store().Lease()
	defer release()
	_, wantKey, err := p.RenderLeased(ctx, rec, renderInstance(t))
	if k, kerr := p.Key(ctx, rec, renderInstance(t)); err != nil || kerr != nil || k != wantKey {
		t.Fatalf("RenderLeased: %v, key %v; Key %v, %v", err, wantKey, k, kerr)
	}
	if _, err := p.Publish(ctx, 2, moduletest.Variant(2), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	got, key, err := p.RenderLeased(ctx, rec, renderInstance(t))
	if err != nil || key != wantKey || !reflect.DeepEqual(got, want) {
		t.Fatalf("RenderLeased of the leased record: %v, key %v (want %v)", err, key, wantKey)
	}
	if st := p.Stats().Memo; st.Hits != 2 || st.Misses != 1 {
		t.Fatalf("memo %+v", st)
	}
}

// An evaluation that panics makes every render waiting for it panic, each
// in its own goroutine, where its caller's recover catches it, with the
// value the evaluation panicked with; nothing is memoized, no flight is
// left, and the next render of the key evaluates again.
func TestPanickingEvaluationPanicsInEachWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := published(t, platform.PublisherOptions{})
		gate := make(chan struct{})
		var calls atomic.Int64
		type boom struct{ n int }
		p.SetEval(func(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
			if calls.Add(1) == 1 {
				<-gate
				panic(&boom{7})
			}
			return kernel.RenderOutput{Instance: "shop"}, nil
		})
		inst := sizedInstance(t, 0, 10)
		const waiters = 3
		recovered := make(chan any, waiters)
		for range waiters {
			go func() {
				defer func() { recovered <- recover() }()
				p.Render(context.Background(), inst)
			}()
		}
		synctest.Wait()
		if st := p.Stats().Memo; st.Shared != waiters-1 {
			t.Fatalf("memo %+v: the renders do not all wait for one evaluation", st)
		}
		close(gate)
		for range waiters {
			if v, ok := (<-recovered).(*boom); !ok || v.n != 7 {
				t.Fatalf("a waiter recovered %v, want the evaluation's own panic value", v)
			}
		}
		if n := p.MemoFlights(); n != 0 {
			t.Fatalf("%d flights left after the panic", n)
		}
		if st := p.Stats().Memo; st.Entries != 0 {
			t.Fatalf("memo %+v: a panic was memoized", st)
		}
		out, _, err := p.Render(context.Background(), inst)
		if err != nil || out.Instance != "shop" || calls.Load() != 2 {
			t.Fatalf("the render after the panic: %+v, %v, %d evaluations (want 2)", out, err, calls.Load())
		}
	})
}

// A platform of two catalogs, web and db, and an instance that uses only
// web: each bump of db is a memo hit that returns what a fresh render
// returns, resources and diagnostics; a bump of web, a change of the
// platform's labels and one of its name each evaluate.
func TestMemoHitsAcrossGenerationsThatChangeNothingItReads(t *testing.T) {
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	in := platformmodule.Input{Name: "acme", Labels: map[string]string{"team": "a"}, Catalogs: []platformmodule.Catalog{
		{Path: "example.com/catalogs/web@v1", Version: "v1.0.0-rc.1", Kinds: []string{"Deployment"}}, // older than the instance requires: a diagnostic
		{Path: "example.com/catalogs/db@v2", Version: "v2.0.0"},
	}}
	gen := int64(0)
	publishAndRender := func(what string, wantEval bool) {
		t.Helper()
		files, err := platformmodule.Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		gen++
		if _, err := p.Publish(ctx, gen, files, kernel.SkewWarn); err != nil {
			t.Fatal(err)
		}
		before := p.Stats().Memo
		out, rec, err := p.Render(ctx, renderInstance(t))
		after := p.Stats().Memo
		want, werr := kernel.New().Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: renderInstance(t), Skew: rec.Skew})
		if err != nil || werr != nil || !reflect.DeepEqual(out, want) || len(out.Diagnostics) != 1 {
			t.Fatalf("%s: render %+v, %v; a fresh render's %+v, %v", what, out, err, want, werr)
		}
		if evaluated := after.Misses - before.Misses; (evaluated == 1) != wantEval || after.Hits+after.Misses != before.Hits+before.Misses+1 {
			t.Fatalf("%s: memo %+v then %+v; want an evaluation: %v", what, before, after, wantEval)
		}
	}
	publishAndRender("generation 1", true)
	for _, v := range []string{"v2.1.0", "v2.2.0", "v2.2.1"} {
		in.Catalogs[1].Version = v
		publishAndRender("db bumped to "+v, false)
	}
	in.Catalogs[0].Version = "v1.0.0-rc.2"
	publishAndRender("web bumped", true)
	in.Labels["team"] = "b"
	publishAndRender("a label changed", true)
	in.Name = "zenith"
	publishAndRender("the name changed", true)
	in.Catalogs[1].Version = "v2.3.0"
	publishAndRender("db bumped again", false)
}

// writtenPlatform is a platform module whose platform.cue holds body
// after its package clause: a module as a user writes it, not as the
// generator does.
func writtenPlatform(body string) platformmodule.Files {
	return platformmodule.Files{
		"cue.mod/module.cue": []byte("module: \"platform.leasekit.dev/acme@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"platform.cue":       []byte("package platform\n\n" + body),
	}
}

// writtenInstance is an instance module of the files given, each after
// its package clause but for the data files (not .cue).
func writtenInstance(files map[string]string) kernel.Instance {
	in := kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
	}}
	for name, body := range files {
		in.Files[name] = []byte(body)
	}
	return in
}

// checkAgainstFresh publishes each platform module in turn as the next
// generation and renders inst after each: every render returns what a
// fresh kernel render against that generation returns, byte for byte,
// error text included, memo hit or not.
func checkAgainstFresh(t *testing.T, inst kernel.Instance, gens ...platformmodule.Files) {
	t.Helper()
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	for i, files := range gens {
		if _, err := p.Publish(ctx, int64(i+1), files, kernel.SkewWarn); err != nil {
			t.Fatalf("generation %d: %v", i+1, err)
		}
		before := p.Stats().Memo
		out, rec, err := p.Render(ctx, inst)
		hit := p.Stats().Memo.Hits > before.Hits
		want, werr := kernel.New().Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: inst, Skew: rec.Skew})
		if !reflect.DeepEqual(out, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("generation %d (memo hit %v): render %+v, %v\na fresh render's %+v, %v", i+1, hit, out, err, want, werr)
		}
	}
}

const (
	exactWeb = `catalogs: "example.com/catalogs/web@v1": version: "v1.0.0"` + "\n"
	exactDB  = `catalogs: "example.com/catalogs/db@v2": version: "v2.0.%d"` + "\n"
	exactUse = `name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1"}
`
)

// Platforms whose name, type and labels decode alike but are written in
// forms that #Render reads differently: a default the instance's label
// overrides where a plain string conflicts with it, and a type absent
// (the default "standard", which #Render supplies itself) or written.
// A render of each after the other is what a fresh render gives.
func TestMemoSeesHowThePlatformWritesWhatARenderReads(t *testing.T) {
	for _, c := range []struct {
		name   string
		labels string // the instance's
		a, b   string // the two platforms
	}{
		{"a label's default", `labels: team: "b"`,
			`name: "acme"` + "\nlabels: team: *\"a\" | string\n", `name: "acme"` + "\nlabels: team: \"a\"\n"},
		{"the name's default", `labels: "platform.leasekit.dev/name": "x"`,
			`name: *"acme" | string` + "\n", `name: "acme"` + "\n"},
		{"the type absent, then written", `labels: "platform.leasekit.dev/type": "x"`,
			`name: "acme"` + "\n", `name: "acme"` + "\ntype: \"standard\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse + c.labels + "\n"})
			checkAgainstFresh(t, inst, writtenPlatform(c.a+exactWeb), writtenPlatform(c.b+exactWeb), writtenPlatform(c.a+exactWeb))
		})
	}
}

// An instance that embeds a data file (CUE's @embed, enabled by
// @extern(embed)) into its top or into requires adds catalogs to
// requires that no field of its CUE files names: bumping one of those
// changes the render, and a render after the bump is what a fresh render
// gives.
func TestMemoSeesCatalogsAnInstanceEmbeds(t *testing.T) {
	const head = "@extern(embed)\n\npackage shop\n\n"
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"at the top of a file", map[string]string{
			"shop.cue": head + "@embed(file=\"db.json\")\n\n" + exactUse,
			"db.json":  `{"requires": {"example.com/catalogs/db@v2": "v2.0.0"}, "components": {"db": {"kind": "Database", "catalog": "example.com/catalogs/db@v2"}}}`,
		}},
		{"in requires", map[string]string{
			"shop.cue": head + exactUse + "requires: {\n\t@embed(file=\"req.json\")\n}\n" +
				`components: db: {kind: "Database", catalog: "example.com/catalogs/db@v2"}` + "\n",
			"req.json": `{"example.com/catalogs/db@v2": "v2.0.0"}`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst := writtenInstance(c.files)
			if paths, known := kernel.ReadsOf(inst.Files).Catalogs(); known && len(paths) < 2 {
				t.Errorf("ReadsOf: %v, known: not the catalog the embedded file requires", paths)
			}
			checkAgainstFresh(t, inst, writtenPlatform(`name: "acme"`+"\n"+exactWeb+fmt.Sprintf(exactDB, 0)),
				writtenPlatform(`name: "acme"`+"\n"+exactWeb+fmt.Sprintf(exactDB, 1)))
		})
	}
}

// A record set by hand (no Identity) is rendered without the memo, and
// the key RenderLeased returns for it keeps Key's promise all the same: a
// result that names the platform's directory has a key that equals no
// key Key computes.
func TestRenderLeasedOfARecordSetByHandBindsAKeyThatNamesItsDirectory(t *testing.T) {
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range writtenPlatform(`name: "acme"` + "\nlabels: team: \"a\"\n" + exactWeb) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	built, err := kernel.New().BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := platform.Generated{Generation: 1, Dir: dir, Platform: built}
	inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse + "labels: team: \"b\"\n"})
	_, key, err := p.RenderLeased(ctx, rec, inst)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("RenderLeased: %v, want an error naming %s", err, dir)
	}
	if k, kerr := p.Key(ctx, rec, inst); kerr != nil || k == key {
		t.Fatalf("Key %v (%v) equals the key %v of a result that names the directory", k, kerr, key)
	}
}

// A render that fails for a reason the memo does not keep, naming the
// platform's directory (a *kernel.ContentError: the directory no longer
// holds what the platform was built from), returns a key bound to that
// directory too: a controller that records it takes it for no render
// that Key says gives the same result.
func TestRenderLeasedBindsTheKeyOfAnyResultThatNamesTheDirectory(t *testing.T) {
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 1, writtenPlatform(`name: "acme"`+"\n"+exactWeb), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	rec, release, _ := p.Store().Lease()
	defer release()
	file := filepath.Join(rec.Dir, "platform.cue")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("package platform\n\n"+`name: "acme"`+"\n"+exactWeb+"// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse})
	_, key, err := p.RenderLeased(ctx, rec, inst)
	var ce *kernel.ContentError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), rec.Dir) {
		t.Fatalf("RenderLeased: %v, want a *kernel.ContentError naming %s", err, rec.Dir)
	}
	if k, kerr := p.Key(ctx, rec, inst); kerr != nil || k == key {
		t.Fatalf("Key %v (%v) equals the key %v of a result that names the directory", k, kerr, key)
	}
}
