package kernel_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
)

// failure is a call that fails, and what its error must be.
type failure struct {
	name string
	call func(t testing.TB) error
	want any // a pointer to the error type errors.As must find
}

// failures returns calls failing in each way a build or a render can.
func failures(t testing.TB) []failure {
	k := kernel.New()
	ctx := context.Background()
	p := build(t)
	missing := filepath.Join(t.TempDir(), "missing")
	buildDir := func(files map[string]string) func(testing.TB) error {
		dir := writeModule(t, files)
		return func(testing.TB) error { _, err := k.BuildPlatform(ctx, dir); return err }
	}
	render := func(body string, skew kernel.SkewPolicy) func(testing.TB) error {
		in := kernel.RenderInput{Platform: p, Skew: skew, Instance: kernel.Instance{Files: instance(body)}}
		return func(testing.TB) error { _, err := k.Render(ctx, in); return err }
	}
	return []failure{
		{"build: schema", buildDir(platformModule(`name: 3
type: "Not DNS"
catalogs: "example.com/web@v1": {version: "v1.0", kinds: ["Service", 3]}
`)), new(*kernel.Error)},
		{"build: conflict", buildDir(platformModule(`name: "ok"
#registry: {size: 1 & 2}
`)), new(*kernel.Error)},
		{"build: syntax", buildDir(platformModule("name: \"ok\"\ncatalogs: {\n")), new(*kernel.Error)},
		{"build: module file", buildDir(map[string]string{"platform.cue": "package platform\n"}), new(*kernel.Error)},
		{"build: missing directory", func(testing.TB) error { _, err := k.BuildPlatform(ctx, missing); return err }, new(*kernel.Error)},
		{"render: evaluation", render(`name: "shop"
labels: team: "shop"
requires: "`+webPath+`": "v1.0.0"
components: web: {kind: "Service", catalog: "`+webPath+`", replicas: 2, spec: replicas: 3}`, kernel.SkewWarn), new(*kernel.Error)},
		{"render: instance values", render(`name: "Shop"
requires: "`+webPath+`": "v1.0"`, kernel.SkewWarn), new(*kernel.Error)},
		{"render: syntax", render(`name: "shop`, kernel.SkewWarn), new(*kernel.Error)},
		{"render: catalog", render(`name: "shop"
requires: "example.com/other@v1": "v1.0.0"`, kernel.SkewWarn), new(*kernel.CatalogError)},
		{"render: skew", render(`name: "shop"
requires: "`+webPath+`": "v1.9.0"`, kernel.SkewRefuse), new(*kernel.SkewError)},
		{"render: components past the limit", func(testing.TB) error {
			small := &kernel.Kernel{Limits: kernel.Limits{MaxComponents: 2}}
			_, err := small.Render(ctx, shop(p, "v1.0.0", 3))
			return err
		}, new(*kernel.LimitError)},
		{"build: nested past the limit", buildDir(platformModule("name: \"ok\"\n" + strings.Repeat("a: ", 200) + "1\n")), new(*kernel.LimitError)},
		{"render: platform changed and no longer loads", func(t testing.TB) error {
			dir := generated(t, acme)
			changed, err := k.BuildPlatform(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			kernel.WriteFiles(t, dir, map[string]string{"platform.cue": "package platform\n\nname: \"acme\"\ncatalogs: {\n"})
			_, err = k.Render(ctx, shop(changed, "v1.0.0", 1))
			return err
		}, new(*kernel.ContentError)},
	}
}

// TestErrorsRetainNothing retains 200 errors of each failing build and
// render and checks that the heap, after garbage collection, holds less
// than 4 KiB for each: an error is plain data, not the evaluation that
// found it.
func TestErrorsRetainNothing(t *testing.T) {
	const n = 200
	for _, f := range failures(t) {
		t.Run(f.name, func(t *testing.T) {
			for range 5 { // warm up: lazily built tables, caches of the runtime
				if err := f.call(t); err == nil {
					t.Fatal("the call did not fail")
				}
			}
			kept := make([]error, 0, n)
			before := heapAfterGC()
			for range n {
				kept = append(kept, f.call(t))
			}
			after := heapAfterGC()
			per := (int64(after) - int64(before)) / n
			t.Logf("%d bytes per retained error: %v", per, kept[0])
			if per > 4<<10 {
				t.Errorf("each retained error holds %d bytes of heap, want under 4 KiB", per)
			}
			runtime.KeepAlive(kept)
		})
	}
}

// heapAfterGC returns the bytes of heap the live objects take once
// garbage collection has run twice (the second frees what the first left
// to finalizers).
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestErrorsHoldNoCUE walks each failing call's error, every pointer,
// interface, struct field, slice and map it reaches, and finds no value of
// a CUE type and nothing opaque (a func, a channel, an unsafe pointer)
// that could hold one; errors.As still finds the typed error.
func TestErrorsHoldNoCUE(t *testing.T) {
	for _, f := range failures(t) {
		t.Run(f.name, func(t *testing.T) {
			err := f.call(t)
			if err == nil || !errors.As(err, f.want) {
				t.Fatalf("error %v, want a %T", err, f.want)
			}
			if path := reachesCUE(reflect.ValueOf(&err).Elem(), "err", map[uintptr]bool{}); path != "" {
				t.Fatalf("error %v reaches %s", err, path)
			}
		})
	}
}

// reachesCUE returns the path of the first value under v whose type comes
// from a cuelang.org package, or which is opaque, or "".
func reachesCUE(v reflect.Value, path string, seen map[uintptr]bool) string {
	if pkg := v.Type().PkgPath(); strings.HasPrefix(pkg, "cuelang.org/") {
		return path + " (" + v.Type().String() + ")"
	}
	switch v.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if !v.IsNil() {
			return path + " (" + v.Type().String() + ", opaque)"
		}
	case reflect.Interface:
		if !v.IsNil() {
			return reachesCUE(v.Elem(), path+".("+v.Elem().Type().String()+")", seen)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return ""
		}
		seen[v.Pointer()] = true
		return reachesCUE(v.Elem(), "(*"+path+")", seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if p := reachesCUE(v.Field(i), path+"."+v.Type().Field(i).Name, seen); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p := reachesCUE(v.Index(i), path+"[i]", seen); p != "" {
				return p
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if p := reachesCUE(it.Key(), path+"[key]", seen); p != "" {
				return p
			}
			if p := reachesCUE(it.Value(), path+"[value]", seen); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestFlattenedErrorsMatchSentinels: a flattened cause still matches the
// standard sentinels it matched, and keeps its text.
func TestFlattenedErrorsMatchSentinels(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := kernel.New().BuildPlatform(context.Background(), missing)
	var ke *kernel.Error
	if !errors.As(err, &ke) || !errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		t.Fatalf("BuildPlatform of a missing directory = %v, want a *kernel.Error matching fs.ErrNotExist alone", err)
	}
	if !strings.Contains(ke.Err.Error(), missing) || !strings.Contains(ke.Err.Error(), "no such file or directory") {
		t.Fatalf("flattened cause %q lost its text", ke.Err)
	}
}

// TestResultsHoldNoCUE: a built platform and a render's output, with a
// diagnostic, are plain data too.
func TestResultsHoldNoCUE(t *testing.T) {
	p := build(t)
	out, err := kernel.New().Render(context.Background(), shop(p, "v1.9.0", 3))
	if err != nil || len(out.Diagnostics) != 1 || len(out.Resources) != 3 {
		t.Fatalf("Render = %+v, %v; want 3 resources and a skew diagnostic", out, err)
	}
	for name, v := range map[string]any{"platform": p, "output": out} {
		if path := reachesCUE(reflect.ValueOf(v), name, map[uintptr]bool{}); path != "" {
			t.Fatalf("the %s reaches %s", name, path)
		}
	}
}
