package baseline_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"leasekit.dev/internal/testkit/depth"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"pgregory.net/rapid"
)

// TestMain serves as a kernel worker when the Workers of a test start this
// binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}

// TestWorkersMatchKernel is the differential test of isolated evaluation:
// over the platform and instance modules TestKernelMatchesNaive draws, a
// Kernel with Workers builds and renders exactly what the Kernel builds
// and renders in-process, platforms, resources and diagnostics alike, and
// fails with equal errors: the same types, fields and texts, positions
// included. Instances are rendered from a directory, from Files and from
// a snapshot, under both skew policies, against platforms changed since
// their build as well.
func TestWorkersMatchKernel(t *testing.T) {
	ctx := context.Background()
	ws := &isolate.Workers{Size: 2}
	defer ws.Close()
	var rendered, failed int
	rapid.Check(t, func(t *rapid.T) {
		g, _, im, pdir, idir := drawModules(t)

		inproc := &kernel.Kernel{}
		if g.rare("limited", 10) {
			inproc.Limits = kernel.Limits{MaxComponents: 1, MaxFileSize: int64(rapid.IntRange(64, 1024).Draw(t, "maxFileSize"))}
		}
		// Workers evaluate for one Kernel, with its Limits: limited
		// inputs get Workers of their own.
		isolated := ws
		if inproc.Limits != (kernel.Limits{}) {
			isolated = &isolate.Workers{Kernel: inproc, Size: 1}
			defer isolated.Close()
		}

		p, err := isolated.BuildPlatform(ctx, pdir)
		want, wantErr := inproc.BuildPlatform(ctx, pdir)
		same(t, "BuildPlatform", p, want, err, wantErr)
		if wantErr != nil {
			failed++
			return
		}
		if g.rare("changed", 10) {
			if err := os.WriteFile(filepath.Join(pdir, "more.cue"), []byte("package platform\n\nname: \"other\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files := map[string][]byte{}
		for name, data := range im.files() {
			files[name] = []byte(data)
		}
		skew := kernel.SkewWarn
		if g.bool("refuse") {
			skew = kernel.SkewRefuse
		}
		snapshot, err := inproc.ReadInstance(ctx, kernel.Instance{Dir: idir})
		if err != nil {
			snapshot = nil
		}
		inputs := map[string]kernel.RenderInput{
			"Dir":   {Platform: want, Instance: kernel.Instance{Dir: idir}, Skew: skew},
			"Files": {Platform: want, Instance: kernel.Instance{Files: files}, Skew: skew},
		}
		if snapshot != nil {
			inputs["Snapshot"] = kernel.RenderInput{Platform: want, Snapshot: snapshot, Skew: skew}
		}
		for form, in := range inputs {
			out, err := isolated.Render(ctx, in)
			wantOut, wantErr := inproc.Render(ctx, in)
			same(t, "Render from "+form, out, wantOut, err, wantErr)
			if wantErr != nil {
				failed++
			} else {
				rendered++
			}
		}
	})
	t.Logf("%d rendered, %d failed, alike in process and in workers", rendered, failed)
	// Whether the drawn inputs both render and fail is judged at rapid's
	// default depth or more (.ci/run's); a run of fewer cases may miss
	// one by chance.
	if depth.AtLeast(100) && (rendered == 0 || failed == 0) {
		t.Error("the drawn inputs did not both render and fail")
	}
	if s := ws.Stats(); s.Crashed+s.KilledTime+s.KilledMemory+s.Cancelled != 0 {
		t.Errorf("workers lost: %+v", s)
	}
}

// same fails t unless a result in a worker equals the one in process:
// results and errors by type, fields and text.
func same(t *rapid.T, what string, got, want any, gotErr, wantErr error) {
	if !reflect.DeepEqual(gotErr, wantErr) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%s: in a worker: %v\n%#v\nin process: %v\n%#v", what, gotErr, gotErr, wantErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: in a worker:\n%#v\nin process:\n%#v", what, got, want)
	}
}
