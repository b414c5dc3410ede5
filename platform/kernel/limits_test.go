package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

const testModuleFile = "module: \"platform.leasekit.dev/test@v0\"\nlanguage: version: \"v0.14.0\"\n"

// platformFiles returns a platform module whose platform.cue also holds
// extra.
func platformFiles(extra string) map[string]string {
	return map[string]string{
		modread.ModuleFile: testModuleFile,
		"platform.cue": "package platform\n\nname: \"acme\"\n" +
			"catalogs: \"example.com/catalogs/web@v1\": {version: \"v1.4.0\", kinds: [\"Deployment\"]}\n" + extra,
	}
}

// wantLimit fails t unless err is a *LimitError for limit, file, value
// and max.
func wantLimit(t interface {
	Helper()
	Fatalf(string, ...any)
}, err error, limit, file string, value, max int64) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want a *LimitError for %s", err, limit)
	}
	got := *le
	if filepath.Join(got.Dir, got.File) != file || got.Dir == "" || strings.HasPrefix(got.File, "/") {
		t.Fatalf("%+v, want %s as a file relative to the module's directory", got, file)
	}
	got.Dir, got.File = "", file
	want := LimitError{Limit: limit, File: file, Value: value, Max: max}
	if got != want {
		t.Fatalf("%+v, want %+v", *le, want)
	}
	if strings.Count(err.Error(), le.Dir) != 1 {
		t.Fatalf("%q names the module's directory %q other than once", err.Error(), le.Dir)
	}
	for _, s := range []string{limit, le.File, fmt.Sprint(value), fmt.Sprint(max)} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%q does not name %s", err.Error(), s)
		}
	}
}

// TestDepthLimitBoundary: a platform nested exactly as deep as MaxDepth
// builds; one level deeper is refused, naming the file, before it is
// parsed.
func TestDepthLimitBoundary(t *testing.T) {
	tt := t
	rapid.Check(t, func(t *rapid.T) {
		expr, _, depth := nested(t, rapid.IntRange(3, 10).Draw(t, "budget"), true)
		if depth < 3 { // platform.cue nests two levels of its own
			t.Skip("shallower than the rest of the file")
		}
		dir, err := os.MkdirTemp("", "depth")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		writeFiles(tt, dir, platformFiles("_deep: "+expr+"\n"))
		k := &Kernel{Limits: Limits{MaxDepth: depth}}
		if _, err := k.BuildPlatform(context.Background(), dir); err != nil {
			t.Fatalf("build at the depth limit %d: %v", depth, err)
		}
		k.Limits.MaxDepth = depth - 1
		_, err = k.BuildPlatform(context.Background(), dir)
		wantLimit(t, err, "MaxDepth", filepath.Join(dir, "platform.cue"), int64(depth), int64(depth-1))
	})
}

// TestDeepFileRefusedBeforeParsing: a file nested 65,536 levels deep, which would take the parser and evaluator time quadratic
// in its depth, is refused by the scan of its bytes: the error is the
// scan's *LimitError, as deep as the scan went, not the loader's.
func TestDeepFileRefusedBeforeParsing(t *testing.T) {
	dir := t.TempDir()
	deep := strings.Repeat("{a:", 1<<16) + "1" + strings.Repeat("}", 1<<16)
	writeFiles(t, dir, platformFiles("_deep: "+deep+"\n"))
	_, err := New().BuildPlatform(context.Background(), dir)
	wantLimit(t, err, "MaxDepth", filepath.Join(dir, "platform.cue"), defaultMaxDepth+1, defaultMaxDepth)

	// Labels nest as braces do, with none in sight.
	writeFiles(t, dir, platformFiles("_deep: "+strings.Repeat("a: ", 1<<16)+"1\n"))
	_, err = New().BuildPlatform(context.Background(), dir)
	wantLimit(t, err, "MaxDepth", filepath.Join(dir, "platform.cue"), defaultMaxDepth+1, defaultMaxDepth)

	// And in an instance held in memory.
	p := buildTestPlatform(t, "acme", "")
	_, err = New().Render(context.Background(), RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
		modread.ModuleFile: []byte(testModuleFile), "shop.cue": []byte("package shop\n\nname: \"shop\"\n_deep: " + deep + "\n"),
	}}})
	wantLimit(t, err, "MaxDepth", "instance/shop.cue", defaultMaxDepth+1, defaultMaxDepth)
}

// TestSizeLimits: a module exactly at MaxFileSize, MaxTotalSize and
// MaxFiles builds; one byte or one file more is refused, naming the file
// and the value.
func TestSizeLimits(t *testing.T) {
	dir := t.TempDir()
	files := platformFiles("// " + strings.Repeat("x", 1000) + "\n")
	writeFiles(t, dir, files)
	size := int64(len(files["platform.cue"]))
	total := size + int64(len(files[modread.ModuleFile]))
	platformFile := filepath.Join(dir, "platform.cue")
	build := func(l Limits) error {
		_, err := (&Kernel{Limits: l}).BuildPlatform(context.Background(), dir)
		return err
	}
	huge := Limits{MaxFileSize: math.MaxInt64, MaxTotalSize: math.MaxInt64, MaxFiles: math.MaxInt, MaxDepth: math.MaxInt, MaxComponents: math.MaxInt}
	for _, l := range []Limits{{MaxFileSize: size}, {MaxTotalSize: total}, {MaxFiles: 2}, huge} {
		if err := build(l); err != nil {
			t.Fatalf("build at %+v: %v", l, err)
		}
	}
	wantLimit(t, build(Limits{MaxFileSize: size - 1}), "MaxFileSize", platformFile, size, size-1)
	wantLimit(t, build(Limits{MaxTotalSize: total - 1}), "MaxTotalSize", platformFile, total, total-1)

	// Two files read, and two entries in the module's directory: one more
	// of either is refused.
	err := build(Limits{MaxFiles: 1})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxFiles" || le.Value != 2 || le.Max != 1 {
		t.Fatalf("build with MaxFiles 1 = %v", err)
	}
	writeFiles(t, dir, map[string]string{"README.md": "not read\n"})
	wantLimit(t, build(Limits{MaxFiles: 2}), "MaxFiles", dir, 3, 2)

	// An instance's files in memory count too, read or not.
	p := buildTestPlatform(t, "acme", "")
	_, err = (&Kernel{Limits: Limits{MaxFiles: 2}}).Render(context.Background(), RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
		modread.ModuleFile: []byte(testModuleFile), "shop.cue": []byte("package shop\n\nname: \"shop\"\n"), "notes.txt": nil,
	}}})
	wantLimit(t, err, "MaxFiles", "instance", 3, 2)
}

// TestComponentLimit: an instance of exactly MaxComponents components
// renders; one more is refused before evaluation.
func TestComponentLimit(t *testing.T) {
	p := buildTestPlatform(t, "acme", "")
	var b strings.Builder
	b.WriteString("package shop\n\nname: \"shop\"\nrequires: \"example.com/catalogs/web@v1\": \"v1.0.0\"\n")
	for i := range 5 {
		fmt.Fprintf(&b, "components: c%d: {kind: \"Deployment\", catalog: \"example.com/catalogs/web@v1\"}\n", i)
	}
	in := RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
		modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"), "shop.cue": []byte(b.String()),
	}}}
	out, err := (&Kernel{Limits: Limits{MaxComponents: 5}}).Render(context.Background(), in)
	if err != nil || len(out.Resources) != 5 {
		t.Fatalf("render at the component limit = %+v, %v", out, err)
	}
	_, err = (&Kernel{Limits: Limits{MaxComponents: 4}}).Render(context.Background(), in)
	wantLimit(t, err, "MaxComponents", "instance", 5, 4)
}

// TestDefaultLimits: the zero Kernel, New and a nil Kernel use the
// documented defaults, and a negative limit is refused, naming it.
func TestDefaultLimits(t *testing.T) {
	want := Limits{MaxFileSize: 1 << 20, MaxTotalSize: 8 << 20, MaxFiles: 1000, MaxDepth: 100, MaxComponents: 1000}
	var zero Kernel
	var none *Kernel
	for name, k := range map[string]*Kernel{"zero": &zero, "New": New(), "nil": none} {
		got, err := k.limits()
		if err != nil || got != want {
			t.Fatalf("%s Kernel: limits %+v, %v; want %+v", name, got, err, want)
		}
	}
	// Set fields are kept, zero ones defaulted.
	if got, _ := (Limits{MaxDepth: 7}).resolved(); got.MaxDepth != 7 || got.MaxFiles != want.MaxFiles {
		t.Fatalf("Limits{MaxDepth: 7} resolves to %+v", got)
	}
	// At the defaults, depth 100 builds and 101 does not.
	for depth, ok := range map[int]bool{100: true, 101: false} {
		dir := t.TempDir()
		writeFiles(t, dir, platformFiles("_deep: "+strings.Repeat("[", depth)+strings.Repeat("]", depth)+"\n"))
		_, err := zero.BuildPlatform(context.Background(), dir)
		if (err == nil) != ok {
			t.Fatalf("zero Kernel, depth %d: %v", depth, err)
		}
	}

	dir := t.TempDir()
	writeFiles(t, dir, platformFiles(""))
	for _, l := range []Limits{{MaxFileSize: -1}, {MaxTotalSize: -1}, {MaxFiles: -1}, {MaxDepth: -1}, {MaxComponents: -1}} {
		k := &Kernel{Limits: l}
		_, berr := k.BuildPlatform(context.Background(), dir)
		_, rerr := k.Render(context.Background(), RenderInput{})
		for _, err := range []error{berr, rerr} {
			if err == nil || !strings.Contains(err.Error(), "-1") || !strings.Contains(err.Error(), "Limits.Max") {
				t.Fatalf("limits %+v: %v, want an error naming the negative limit", l, err)
			}
		}
	}
}

// TestSizeLimitsProperty: over modules of generated file sizes and limits
// drawn around them, a build succeeds exactly when no file is larger than
// MaxFileSize, the files together no larger than MaxTotalSize and no more
// than MaxFiles; otherwise it fails with a *LimitError for a limit the
// module goes past, reporting a value past it.
func TestSizeLimitsProperty(t *testing.T) {
	tt := t
	rapid.Check(t, func(t *rapid.T) {
		files := platformFiles("")
		for i := range rapid.IntRange(0, 4).Draw(t, "extra") {
			pad := rapid.IntRange(0, 3000).Draw(t, "pad")
			files[fmt.Sprintf("x%d.cue", i)] = fmt.Sprintf("package platform\n\nlabels: x%d: \"y\"\n// %s\n", i, strings.Repeat("p", pad))
		}
		var largest, total int64
		for _, data := range files {
			largest, total = max(largest, int64(len(data))), total+int64(len(data))
		}
		count := int64(len(files)) // files read; the root lists as many entries: its files and cue.mod
		around := func(label string, v int64) int64 {
			return max(1, v+rapid.Int64Range(-2, 2).Draw(t, label))
		}
		l := Limits{MaxFileSize: around("maxFileSize", largest), MaxTotalSize: around("maxTotalSize", total), MaxFiles: int(around("maxFiles", count))}
		past := map[string]bool{"MaxFileSize": largest > l.MaxFileSize, "MaxTotalSize": total > l.MaxTotalSize, "MaxFiles": count > int64(l.MaxFiles)}

		dir, err := os.MkdirTemp("", "sizes")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		writeFiles(tt, dir, files)
		_, err = (&Kernel{Limits: l}).BuildPlatform(context.Background(), dir)
		if !past["MaxFileSize"] && !past["MaxTotalSize"] && !past["MaxFiles"] {
			if err != nil {
				t.Fatalf("limits %+v over %d files of %d bytes, the largest %d: %v", l, count, total, largest, err)
			}
			return
		}
		var le *LimitError
		if !errors.As(err, &le) || !past[le.Limit] || le.Value <= le.Max {
			t.Fatalf("limits %+v over %d files of %d bytes, the largest %d, past %v: %v", l, count, total, largest, past, err)
		}
	})
}
