package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
)

// TestRenderListsEveryProblem: an instance with a problem a value rule
// finds and problems its schema finds is refused with all of them in one
// *Error, each at its position relative to the instance's module, and
// none at a position in the kernel's own files.
func TestRenderListsEveryProblem(t *testing.T) {
	p := build(t)
	_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`
name: "Shop!"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", replicas: "two"}
components: api: {kind: "Service", catalog: "` + batchPath + `"}
`)}})
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		t.Fatalf("Render: %v, want an *Error", err)
	}
	for _, want := range []struct{ path, pos, msg string }{
		{"name", "shop.cue:3:", `"Shop!" must be a DNS label`},
		{"components.web.replicas", "shop.cue:5:", `"two"`},
		{"components.api.catalog", "shop.cue:6:", "is not in the instance's requires"},
	} {
		found := false
		for _, pr := range ke.Problems {
			if pr.Path == want.path && strings.Contains(pr.Message, want.msg) && len(pr.Positions) > 0 && strings.HasPrefix(pr.Positions[0], want.pos) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem at %s %s saying %s in\n%v", want.pos, want.path, want.msg, err)
		}
	}
	for _, pr := range ke.Problems {
		for _, pos := range pr.Positions {
			if strings.Contains(pos, "render.cue") || strings.Contains(pos, "schema.cue") || strings.HasPrefix(pos, "instance/") {
				t.Errorf("problem %q: position %s is not the user's file relative to the module", pr, pos)
			}
		}
	}
}

// TestRenderErrorsNameTheModuleOnce: a render that fails in CUE's
// evaluation names the instance's directory once, its files relative to
// it, the platform's by their paths, and no file or definition of the
// kernel.
func TestRenderErrorsNameTheModuleOnce(t *testing.T) {
	p := build(t)
	files := map[string]string{}
	for k, v := range instance(`name: "shop"
requires: "` + webPath + `": "v1.0.0"
labels: team: "shop"
components: web: {kind: "Service", catalog: "` + webPath + `"}`) {
		files[k] = string(v)
	}
	dir := writeModule(t, files)
	_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: dir}})
	if err == nil {
		t.Fatal("Render of a conflicting label and a non-concrete spec succeeded")
	}
	msg := err.Error()
	if strings.Count(msg, dir) != 1 || strings.Contains(msg, "render.cue") || strings.Contains(msg, "#Render") || !strings.Contains(msg, "shop.cue:") {
		t.Fatalf("error names the directory %d times, or the kernel's files:\n%s", strings.Count(msg, dir), msg)
	}
	var ke *kernel.Error
	if !errors.As(err, &ke) || len(ke.Problems[0].Positions) != 2 {
		t.Fatalf("%v: want an *Error at both labels", err)
	}
}

// TestCatalogErrorsHavePositions: a catalog the platform does not offer
// is refused with the position where the instance requires it, and a
// kind its catalog lacks with the position of the kind.
func TestCatalogErrorsHavePositions(t *testing.T) {
	p := build(t)
	_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`
name: "shop"
requires: "example.com/catalogs/cache@v1": "v1.0.0"
requires: "` + dbPath + `": "v0.3.0"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "CronJob", catalog: "` + webPath + `"}
`)}})
	want := map[string]string{
		"example.com/catalogs/cache@v1": "shop.cue:4:",
		dbPath:                          "shop.cue:5:",
		webPath:                         "shop.cue:7:",
	}
	for _, e := range joined(err) {
		var ce *kernel.CatalogError
		if !errors.As(e, &ce) {
			t.Fatalf("%v: want *CatalogErrors", err)
		}
		if pos, ok := want[ce.Path]; !ok || !strings.HasPrefix(ce.Position, pos) || !strings.Contains(ce.Error(), ce.Position+": ") {
			t.Errorf("%v: position %q, want %s", ce, ce.Position, pos)
		}
		delete(want, ce.Path)
	}
	if len(want) > 0 {
		t.Errorf("%v: no error for %v", err, want)
	}
}
