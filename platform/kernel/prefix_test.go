package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// joinType is the type of errors.Join's errors.
var joinType = reflect.TypeOf(errors.Join(errors.New("a"), errors.New("b")))

// evaluator is what both the kernel and its worker pool offer.
type evaluator interface {
	BuildPlatform(ctx context.Context, dir string) (*kernel.Platform, error)
	Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error)
}

// TestErrorsBeginWithKernelOnce: every error an exported method or
// function of the package returns begins with "kernel: ", and says it
// once, whatever it wraps (a platform that no longer loads), but for a
// pool of workers refused or closed, whose error is isolate's, said once; a join of the errors of several catalogs at fault says each on
// a line of its own, each so. ctx.Err() is returned as it is, as
// documented.
func TestErrorsBeginWithKernelOnce(t *testing.T) {
	ctx := context.Background()
	k := kernel.New()
	p, err := k.BuildPlatform(ctx, generated(t, acme))
	if err != nil {
		t.Fatal(err)
	}
	// A platform whose directory changes after its build: first to other
	// content that still loads, then to content that does not.
	changedDir := generated(t, acme)
	changed, err := k.BuildPlatform(ctx, changedDir)
	if err != nil {
		t.Fatal(err)
	}
	broken := generated(t, acme)
	brokenP, err := k.BuildPlatform(ctx, broken)
	if err != nil {
		t.Fatal(err)
	}
	older := generated(t, platformmodule.Input{Name: "acme", Catalogs: []platformmodule.Catalog{
		{Path: webPath, Version: "v1.0.0", Kinds: []string{"Deployment"}},
		{Path: batchPath, Version: "v2.0.0", Kinds: []string{"CronJob"}},
	}})
	olderP, err := k.BuildPlatform(ctx, older)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(changedDir, "extra.cue"), []byte("package platform\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name := range map[string]bool{"platform.cue": true} {
		if err := os.WriteFile(filepath.Join(broken, name), []byte("package platform\nname: {\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := writeModule(t, platformModule(`name: "acme"`))
	if err := syscall.Mkfifo(filepath.Join(fifo, "pipe.cue"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	closed := &isolate.Workers{Kernel: k}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	small := &kernel.Kernel{Limits: kernel.Limits{MaxFileSize: 64}}
	bad := &kernel.Kernel{Limits: kernel.Limits{MaxFiles: -1}}
	badWorkers := &isolate.Workers{Kernel: k, Size: -1}

	build := func(k evaluator, files map[string]string) func() error {
		return func() error {
			_, err := k.BuildPlatform(ctx, writeModule(t, files))
			return err
		}
	}
	render := func(k evaluator, in kernel.RenderInput) func() error {
		return func() error {
			_, err := k.Render(ctx, in)
			return err
		}
	}
	shopIn := func(p *kernel.Platform, body string) kernel.RenderInput {
		return kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(body)}}
	}
	twoSkewed := `name: "shop"
requires: {"` + webPath + `": "v1.4.0", "` + batchPath + `": "v2.1.0"}
`
	cases := []struct {
		name string
		call func() error
	}{
		{"BuildPlatform: a missing directory", func() error { _, err := k.BuildPlatform(ctx, filepath.Join(t.TempDir(), "none")); return err }},
		{"BuildPlatform: a file", func() error { _, err := k.BuildPlatform(ctx, file); return err }},
		{"BuildPlatform: no module file", build(k, map[string]string{"platform.cue": "package platform\n"})},
		{"BuildPlatform: a bad module file", build(k, map[string]string{"cue.mod/module.cue": "module: 1\n", "platform.cue": "package platform\n"})},
		{"BuildPlatform: dependencies", build(k, map[string]string{"cue.mod/module.cue": "module: \"a.com/p@v0\"\nlanguage: version: \"v0.14.0\"\ndeps: \"x.com@v0\": v: \"v0.1.0\"\n", "platform.cue": "package platform\n"})},
		{"BuildPlatform: vendored packages", build(k, func() map[string]string {
			m := platformModule(`name: "acme"`)
			m["cue.mod/pkg/x.com/y.cue"] = "package y\n"
			return m
		}())},
		{"BuildPlatform: a named pipe", func() error { _, err := k.BuildPlatform(ctx, fifo); return err }},
		{"BuildPlatform: a file past MaxFileSize", build(small, platformModule(`name: "acme"`+strings.Repeat(" ", 100)))},
		{"BuildPlatform: bad Limits", build(bad, platformModule(`name: "acme"`))},
		{"BuildPlatform: bad Workers", build(badWorkers, platformModule(`name: "acme"`))},
		{"BuildPlatform: closed Workers", build(closed, platformModule(`name: "acme"`))},
		{"BuildPlatform: two packages", build(k, map[string]string{"cue.mod/module.cue": "module: \"a.com/p@v0\"\nlanguage: version: \"v0.14.0\"\n", "a.cue": "package a\n", "b.cue": "package b\n"})},
		{"BuildPlatform: a syntax error", build(k, platformModule("name: {\n"))},
		{"BuildPlatform: a schema violation", build(k, platformModule("name: 1\n"))},
		{"Render: no platform", render(k, kernel.RenderInput{Instance: kernel.Instance{Files: instance(`name: "shop"`)}})},
		{"Render: a zero platform", render(k, shopIn(&kernel.Platform{}, `name: "shop"`))},
		{"Render: both instance and snapshot", render(k, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"`)}, Snapshot: &kernel.InstanceSnapshot{}})},
		{"Render: both Dir and Files", render(k, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: t.TempDir(), Files: instance(`name: "shop"`)}})},
		{"Render: no instance", render(k, kernel.RenderInput{Platform: p})},
		{"Render: an escaping file name", render(k, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{"../x.cue": []byte("x")}}})},
		{"Render: a missing instance directory", render(k, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: filepath.Join(t.TempDir(), "none")}})},
		{"Render: an instance without a module file", render(k, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{"shop.cue": []byte("package shop\n")}}})},
		{"Render: an instance syntax error", render(k, shopIn(p, "name: {"))},
		{"Render: an instance schema violation", render(k, shopIn(p, "name: 1"))},
		{"Render: a changed platform", render(k, shopIn(changed, `name: "shop"`))},
		{"Render: a platform that no longer loads", render(k, shopIn(brokenP, `name: "shop"`))},
		{"Render: two catalogs skewed", render(k, kernel.RenderInput{Platform: olderP, Skew: kernel.SkewRefuse, Instance: kernel.Instance{Files: instance(twoSkewed)}})},
		{"Render: two catalogs missing", render(k, shopIn(p, `name: "shop"
requires: {"a.com/x@v0": "v0.1.0", "b.com/y@v0": "v0.1.0"}`))},
		{"Render: two kinds missing", render(k, shopIn(p, `name: "shop"
requires: "`+webPath+`": "v1.4.0"
components: a: {kind: "Nope", catalog: "`+webPath+`"}
components: b: {kind: "Nada", catalog: "`+webPath+`"}`))},
		{"Render: a kind missing beside a refused label", render(k, shopIn(p, `name: "shop"
labels: tier: "no spaces allowed"
requires: "`+webPath+`": "v1.4.0"
components: a: {kind: "Nope", catalog: "`+webPath+`"}`))},
		{"Render: an instance past MaxFileSize", render(small, shopIn(p, `name: "shop"`+strings.Repeat(" ", 100)))},
		{"Render: bad Limits", render(bad, shopIn(p, `name: "shop"`))},
		{"Render: closed Workers", render(closed, shopIn(p, `name: "shop"`))},
		{"ReadInstance: a missing directory", func() error {
			_, err := k.ReadInstance(ctx, kernel.Instance{Dir: filepath.Join(t.TempDir(), "none")})
			return err
		}},
		{"ReadInstance: both Dir and Files", func() error {
			_, err := k.ReadInstance(ctx, kernel.Instance{Dir: t.TempDir(), Files: instance(`name: "shop"`)})
			return err
		}},
		{"ReadInstance: no instance", func() error { _, err := k.ReadInstance(ctx, kernel.Instance{}); return err }},
		{"ReadInstance: an escaping file name", func() error {
			_, err := k.ReadInstance(ctx, kernel.Instance{Files: map[string][]byte{"a/../../x": []byte("x")}})
			return err
		}},
		{"ReadInstance: bad Limits", func() error {
			_, err := bad.ReadInstance(ctx, kernel.Instance{Files: instance(`name: "shop"`)})
			return err
		}},
		{"ParseSkewPolicy", func() error { _, err := kernel.ParseSkewPolicy("Sometimes"); return err }},
	}
	for _, c := range cases {
		err := c.call()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		// A join (one error for each catalog at fault) says each of its
		// errors on a line of its own.
		lines := []string{err.Error()}
		if reflect.TypeOf(err) == joinType {
			lines = strings.Split(err.Error(), "\n")
			if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != len(lines) {
				t.Errorf("%s: a join of %d errors in %d lines: %q", c.name, n, len(lines), err)
			}
		}
		// A pool of workers speaks for itself: its refusals and its end
		// are isolate's, said once, with no "kernel: " beside them.
		prefix, other := "kernel: ", "isolate: "
		if strings.Contains(c.name, "Workers") {
			prefix, other = other, prefix
		}
		for _, msg := range lines {
			if !strings.HasPrefix(msg, prefix) || strings.Count(msg, prefix) != 1 || strings.Contains(msg, other) {
				t.Errorf("%s: %q does not begin with %q exactly once, or also says %q", c.name, msg, prefix, other)
			}
		}
	}

	// ctx.Err() is the exception: returned as it is.
	for name, call := range map[string]func() error{
		"BuildPlatform": func() error { _, err := k.BuildPlatform(cancelled, generated(t, acme)); return err },
		"Render":        func() error { _, err := k.Render(cancelled, shopIn(p, `name: "shop"`)); return err },
		"ReadInstance": func() error {
			_, err := k.ReadInstance(cancelled, kernel.Instance{Files: instance(`name: "shop"`)})
			return err
		},
	} {
		if err := call(); !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
			t.Errorf("%s with a cancelled ctx: %v, want ctx.Err()", name, err)
		}
	}
}
