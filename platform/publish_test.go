package platform_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// Forgetting the boot step is loud: Publish, Render and Run refuse, and
// nothing is created.
func TestNotBootedIsRefused(t *testing.T) {
	root := filepath.Join(t.TempDir(), "platform")
	p := platform.NewPublisher(root, platform.PublisherOptions{NoSync: true})
	ctx := context.Background()
	if _, err := p.Publish(ctx, 1, moduletest.Variant(0), 0); !errors.Is(err, platform.ErrNotBooted) {
		t.Errorf("Publish before Boot: %v", err)
	}
	if _, _, err := p.Render(ctx, renderInstance(t)); !errors.Is(err, platform.ErrNotBooted) {
		t.Errorf("Render before Boot: %v", err)
	}
	if err := p.Run(ctx); !errors.Is(err, platform.ErrNotBooted) {
		t.Errorf("Run before Boot: %v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unbooted Publisher created Root: %v", err)
	}
	if st := p.Stats(); !errors.Is(st.LastError, platform.ErrNotBooted) {
		t.Errorf("Stats().LastError = %v", st.LastError)
	}
}

// Boot empties a Root left by an earlier process, and only once.
func TestBootEmptiesRootOnce(t *testing.T) {
	root := filepath.Join(t.TempDir(), "platform")
	old := platform.NewPublisher(root, platform.PublisherOptions{NoSync: true})
	if err := old.Boot(); err != nil {
		t.Fatal(err)
	}
	for g := int64(1); g <= 3; g++ {
		if _, err := old.Publish(context.Background(), g, moduletest.Variant(int(g)), 0); err != nil {
			t.Fatal(err)
		}
	}
	p := platform.NewPublisher(root, platform.PublisherOptions{NoSync: true})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	if g := generations(t, p); len(g) != 0 {
		t.Fatalf("after Boot, Generations() = %v", g)
	}
	if _, err := p.Publish(context.Background(), 1, moduletest.Variant(0), 0); err != nil {
		t.Fatal(err)
	}
	_, release, _ := p.Store().Lease()
	defer release()
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	checkTree(t, p.Layout().Dir(1), moduletest.Variant(0))
}

// Boot refuses a Root the layout never claimed, deleting nothing.
func TestBootRefusesForeignRoot(t *testing.T) {
	home := t.TempDir()
	precious := filepath.Join(home, "thesis.tex")
	if err := os.WriteFile(precious, []byte("five years"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := platform.NewPublisher(home, platform.PublisherOptions{NoSync: true})
	err := p.Boot()
	if !errors.Is(err, dirlife.ErrNotOwned) {
		t.Fatalf("Boot of a foreign non-empty directory: %v, want ErrNotOwned", err)
	}
	if data, err := os.ReadFile(precious); err != nil || string(data) != "five years" {
		t.Fatalf("Boot touched a foreign file: %q, %v", data, err)
	}
	if _, err := p.Publish(context.Background(), 1, moduletest.Variant(0), 0); !errors.Is(err, platform.ErrNotBooted) {
		t.Fatalf("Publish after a failed Boot: %v, want ErrNotBooted", err)
	}
}

// Refused arguments name the value and leave everything as it was.
func TestPublishRefusals(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	rec, err := p.Publish(ctx, 5, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if got, ok := p.Store().Generated(); !ok || got != rec {
			t.Fatalf("store holds %+v, %v; want %+v", got, ok, rec)
		}
		if g := generations(t, p); !slices.Equal(g, []int64{5}) {
			t.Fatalf("Generations() = %v, want [5]", g)
		}
		checkTree(t, rec.Dir, moduletest.Variant(0))
	}
	for _, g := range []int64{0, -1} {
		_, err := p.Publish(ctx, g, moduletest.Variant(1), 0)
		var ge *platform.GenerationError
		if !errors.As(err, &ge) || ge.Generation != g {
			t.Errorf("Publish(%d): %v, want a GenerationError naming it", g, err)
		}
		unchanged(t)
	}
	for _, files := range []platformmodule.Files{nil, {}} {
		if _, err := p.Publish(ctx, 6, files, 0); !errors.Is(err, platform.ErrNoFiles) {
			t.Errorf("Publish(6, empty): %v, want ErrNoFiles", err)
		}
		unchanged(t)
	}
	_, err = p.Publish(ctx, 4, moduletest.Variant(1), 0)
	var se *publish.StaleError[int64]
	if !errors.As(err, &se) || se.Key != 4 || se.Current != 5 || !errors.Is(err, publish.ErrStale) {
		t.Errorf("Publish(4) with 5 current: %v, want a StaleError", err)
	}
	unchanged(t)
	bad := moduletest.Variant(1)
	bad["/etc/passwd"] = []byte("x")
	_, err = p.Publish(ctx, 6, bad, 0)
	var ne *dirlife.NameError
	if !errors.As(err, &ne) || ne.Name != "/etc/passwd" {
		t.Errorf("Publish with an absolute file name: %v, want a NameError naming it", err)
	}
	unchanged(t)
	if len(strayEntries(t, p.Layout().Root)) != 0 {
		t.Fatalf("refusals left %v", strayEntries(t, p.Layout().Root))
	}
}

// A failed build of a new generation returns the kernel's error with its
// positions, keeps the current record, and removes the failed directory.
func TestFailedBuildOfNewGenerationKeepsCurrent(t *testing.T) {
	for _, syntax := range []bool{true, false} {
		p := newBooted(t, platform.PublisherOptions{})
		ctx := context.Background()
		rec, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Publish(ctx, 2, brokenFiles(t, syntax), 0)
		var ke *kernel.Error
		if !errors.As(err, &ke) || len(ke.Problems) == 0 || len(ke.Problems[0].Positions) == 0 {
			t.Fatalf("syntax error %v: %v, want a kernel.Error with positions", syntax, err)
		}
		if got, _ := p.Store().Generated(); got != rec {
			t.Fatalf("after a failed build the store holds %+v", got)
		}
		if g := generations(t, p); !slices.Equal(g, []int64{1}) {
			t.Fatalf("after a failed build Generations() = %v, want [1]", g)
		}
		if stray := strayEntries(t, p.Layout().Root); len(stray) != 0 {
			t.Fatalf("a failed build left %v", stray)
		}
		checkTree(t, rec.Dir, moduletest.Variant(0))
		if st := p.Stats(); st.FailedBuilds != 1 || st.LastError == nil {
			t.Fatalf("stats %+v", st)
		}
		// The next good generation still publishes.
		if _, err := p.Publish(ctx, 2, moduletest.Variant(1), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// A failed rewrite of the current generation puts the old bytes back and
// sets the old record again.
func TestFailedRewriteRestoresOldFiles(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	rec, err := p.Publish(ctx, 3, moduletest.Variant(0), kernel.SkewRefuse)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Publish(ctx, 3, brokenFiles(t, false), kernel.SkewRefuse)
	if _, ok := errors.AsType[*kernel.Error](err); !ok {
		t.Fatalf("rewrite with a broken module: %v, want a kernel.Error", err)
	}
	checkTree(t, rec.Dir, moduletest.Variant(0))
	if got, ok := p.Store().Generated(); !ok || got != rec {
		t.Fatalf("after a failed rewrite the store holds %+v, %v; want %+v", got, ok, rec)
	}
	if out, _, err := p.Render(ctx, renderInstance(t)); err != nil || len(out.Resources) != 1 {
		t.Fatalf("render after a failed rewrite: %+v, %v", out, err)
	}
	// The restored files are the published ones: re-publishing them is free.
	if _, err := p.Publish(ctx, 3, moduletest.Variant(0), kernel.SkewRefuse); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Unchanged != 1 || st.FailedBuilds != 1 || st.Publishes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// An identical re-publish writes and builds nothing; the files are
// compared with those published, not with the caller's reused buffers.
func TestIdenticalRepublishIsFree(t *testing.T) {
	var events []platform.PublishEvent
	p := newBooted(t, platform.PublisherOptions{OnPublish: func(ev platform.PublishEvent) { events = append(events, ev) }})
	ctx := context.Background()
	files := moduletest.Variant(0)
	rec, err := p.Publish(ctx, 1, files, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
	if err != nil || again != rec {
		t.Fatalf("identical re-publish = %+v, %v; want %+v", again, err, rec)
	}
	if ev := events[1]; ev.Outcome != publish.Unchanged || ev.Timings != (publish.Timings{}) {
		t.Fatalf("identical re-publish event %+v", ev)
	}

	// A new skew with the same files changes the record, not the disk.
	skewed, err := p.Publish(ctx, 1, moduletest.Variant(0), kernel.SkewRefuse)
	if err != nil || skewed.Skew != kernel.SkewRefuse || skewed.Platform != rec.Platform {
		t.Fatalf("re-publish with a new skew = %+v, %v", skewed, err)
	}
	if got, _ := p.Store().Generated(); got.Skew != kernel.SkewRefuse {
		t.Fatalf("store skew %v", got.Skew)
	}

	// The caller reuses its buffer: the change is seen.
	files[platformmodule.PlatformFile][0] = '/'
	files[platformmodule.PlatformFile] = append(files[platformmodule.PlatformFile], "\nlabels: team: \"x\"\n"...)
	changed, err := p.Publish(ctx, 1, files, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := events[len(events)-1]; ev.Outcome != publish.Changed || ev.Identity != changed.Identity {
		t.Fatalf("a changed buffer re-published as %+v", ev)
	}
	checkTree(t, changed.Dir, files)
	if st := p.Stats(); st.Publishes != 2 || st.Unchanged != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Render leases the current record, renders with its skew and releases.
func TestRender(t *testing.T) {
	p := newBooted(t, platform.PublisherOptions{})
	ctx := context.Background()
	if _, _, err := p.Render(ctx, renderInstance(t)); !errors.Is(err, platform.ErrNotReady) {
		t.Fatalf("Render with nothing published: %v, want ErrNotReady", err)
	}
	// The instance requires web v1.0.0; variant 0 carries exactly that.
	if _, err := p.Publish(ctx, 1, moduletest.Variant(0), kernel.SkewRefuse); err != nil {
		t.Fatal(err)
	}
	out, rec, err := p.Render(ctx, renderInstance(t))
	if err != nil || rec.Generation != 1 || len(out.Resources) != 1 || out.Resources[0].Kind != "Deployment" {
		t.Fatalf("Render = %+v, %+v, %v", out, rec, err)
	}
	if l := p.Store().Leased(); len(l) != 0 {
		t.Fatalf("Render left leases %v", l)
	}

	// The record's skew policy governs: an instance requiring a newer web
	// catalog is refused under SkewRefuse and warned about under SkewWarn.
	newer := renderInstance(t)
	newer.Files["shop.cue"] = bytes.Replace(newer.Files["shop.cue"], []byte(`"v1.0.0"`), []byte(`"v1.2.0"`), 1)
	if _, _, err := p.Render(ctx, newer); !errors.As(err, new(*kernel.SkewError)) {
		t.Fatalf("skewed render under SkewRefuse: %v, want a SkewError", err)
	}
	if _, err := p.Publish(ctx, 1, moduletest.Variant(0), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	if out, _, err := p.Render(ctx, newer); err != nil || len(out.Diagnostics) != 1 {
		t.Fatalf("skewed render under SkewWarn: %+v, %v; want one diagnostic", out, err)
	}
}

// A context that has ended refuses a publish before anything is written.
func TestCancelledContextWritesNothing(t *testing.T) {
	var events []platform.PublishEvent
	p := newBooted(t, platform.PublisherOptions{OnPublish: func(ev platform.PublishEvent) { events = append(events, ev) }})
	rec, err := p.Publish(context.Background(), 1, moduletest.Variant(0), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, gen := range []int64{2, 1} { // a new generation; a changed current one
		if _, err := p.Publish(ctx, gen, moduletest.Variant(1), 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Publish(%d) with a cancelled context: %v", gen, err)
		}
		if ev := events[len(events)-1]; ev.Outcome != publish.Failed || ev.Timings.Write != 0 {
			t.Fatalf("Publish(%d) with a cancelled context: event %+v, want failed with nothing written", gen, ev)
		}
		if got, _ := p.Store().Generated(); got != rec {
			t.Fatalf("store holds %+v", got)
		}
		if g := generations(t, p); !slices.Equal(g, []int64{1}) {
			t.Fatalf("Generations() = %v", g)
		}
		checkTree(t, rec.Dir, moduletest.Variant(0))
	}
	// An identical re-publish needs no context time: it still answers.
	if got, err := p.Publish(ctx, 1, moduletest.Variant(0), 0); err != nil || got != rec {
		t.Fatalf("identical re-publish with a cancelled context: %+v, %v", got, err)
	}
}

// Every method of a zero Publisher panics naming NewPublisher, instead of
// blocking or dereferencing nil.
func TestZeroPublisherPanics(t *testing.T) {
	var p platform.Publisher
	for name, f := range map[string]func(){
		"Boot":    func() { p.Boot() },
		"Publish": func() { p.Publish(context.Background(), 1, moduletest.Variant(0), 0) },
		"Forget":  func() { p.Forget() },
		"Store":   func() { p.Store() },
		"Stats":   func() { p.Stats() },
		"Run":     func() { p.Run(context.Background()) },
		"Render":  func() { p.Render(context.Background(), renderInstance(t)) },
	} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.Contains(r, "NewPublisher") {
					t.Errorf("zero Publisher's %s panicked with %q, want a message naming NewPublisher", name, r)
				}
			}()
			f()
		}()
	}
}
