package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
)

func TestRender(t *testing.T) {
	p := build(t)
	out, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`
name: "shop"
namespace: "prod"
requires: "` + webPath + `": "v1.2.0"
labels: tier: "frontend"
components: web: {kind: "Deployment", catalog: "` + webPath + `", replicas: 3, labels: "app.kubernetes.io/version": "1.0", spec: image: "shop:1"}
components: api: {kind: "Service", catalog: "` + webPath + `", spec: port: 8080}
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Instance != "shop" || len(out.Diagnostics) != 0 || len(out.Resources) != 2 {
		t.Fatalf("output %+v", out)
	}
	got, _ := json.Marshal(out.Resources)
	want := `[{"Component":"api","Kind":"Service","Name":"shop-api","Object":{"apiVersion":"leasekit.dev/v1alpha1","kind":"Service","metadata":{"annotations":{"platform.leasekit.dev/catalog":"example.com/catalogs/web@v1","platform.leasekit.dev/catalog-version":"v1.4.0"},"labels":{"app.kubernetes.io/instance":"shop","app.kubernetes.io/managed-by":"leasekit","app.kubernetes.io/name":"api","platform.leasekit.dev/name":"acme","platform.leasekit.dev/type":"standard","team":"platform","tier":"frontend"},"name":"shop-api","namespace":"prod"},"spec":{"port":8080,"replicas":1}}},` +
		`{"Component":"web","Kind":"Deployment","Name":"shop-web","Object":{"apiVersion":"leasekit.dev/v1alpha1","kind":"Deployment","metadata":{"annotations":{"platform.leasekit.dev/catalog":"example.com/catalogs/web@v1","platform.leasekit.dev/catalog-version":"v1.4.0"},"labels":{"app.kubernetes.io/instance":"shop","app.kubernetes.io/managed-by":"leasekit","app.kubernetes.io/name":"web","app.kubernetes.io/version":"1.0","platform.leasekit.dev/name":"acme","platform.leasekit.dev/type":"standard","team":"platform","tier":"frontend"},"name":"shop-web","namespace":"prod"},"spec":{"image":"shop:1","replicas":3}}}]`
	if string(got) != want {
		t.Fatalf("resources:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderFromDir(t *testing.T) {
	p := build(t)
	files := map[string]string{}
	for k, v := range instance(`name: "shop"
requires: "` + batchPath + `": "v2.0.0"
components: nightly: {kind: "CronJob", catalog: "` + batchPath + `", spec: schedule: "0 3 * * *"}`) {
		files[k] = string(v)
	}
	out, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: writeModule(t, files)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Resources) != 1 || out.Resources[0].Name != "shop-nightly" || out.Resources[0].Kind != "CronJob" {
		t.Fatalf("output %+v", out)
	}
}

// joined returns the errors err joins (or err alone).
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestRenderSkew(t *testing.T) {
	p := build(t)
	// Both catalogs newer than the platform's; the label conflict would
	// fail evaluation, so a SkewError proves the refusal came first.
	body := `name: "shop"
requires: "` + webPath + `": "v1.9.0"
requires: "` + batchPath + `": "v2.2.0-rc.1"
labels: team: "not-platform"
components: web: {kind: "Deployment", catalog: "` + webPath + `"}
`
	_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Skew: kernel.SkewRefuse, Instance: kernel.Instance{Files: instance(body)}})
	var skews []*kernel.SkewError
	for _, e := range joined(err) {
		var se *kernel.SkewError
		if !errors.As(e, &se) {
			t.Fatalf("Render under SkewRefuse = %v, want only *SkewError", err)
		}
		skews = append(skews, se)
	}
	want := []kernel.SkewError{{batchPath, "v2.2.0-rc.1", "v2.1.0"}, {webPath, "v1.9.0", "v1.4.0"}}
	if len(skews) != 2 || *skews[0] != want[0] || *skews[1] != want[1] {
		t.Fatalf("skew errors %v, want %v", skews, want)
	}

	// Under SkewWarn the same instance renders (once its label agrees)
	// against the platform's versions, with a diagnostic row per catalog.
	body = strings.Replace(body, `"not-platform"`, `"platform"`, 1)
	out, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Skew: kernel.SkewWarn, Instance: kernel.Instance{Files: instance(body)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Diagnostics) != 2 {
		t.Fatalf("diagnostics %+v, want 2", out.Diagnostics)
	}
	for i, d := range out.Diagnostics {
		if d.Path != want[i].Path || d.InstanceVersion != want[i].InstanceVersion || d.PlatformVersion != want[i].PlatformVersion || !d.Newer || d.Severity != "warning" {
			t.Fatalf("diagnostic %d = %+v, want %+v", i, d, want[i])
		}
	}
	ann := out.Resources[0].Object["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann["platform.leasekit.dev/catalog-version"] != "v1.4.0" {
		t.Fatalf("rendered against %v, want the platform's v1.4.0", ann)
	}

	// An older or equal requirement is no skew.
	out, err = kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Skew: kernel.SkewRefuse, Instance: kernel.Instance{Files: instance(`name: "shop"
requires: "` + webPath + `": "v1.4.0"
requires: "` + batchPath + `": "v2.0.9"`)}})
	if err != nil || len(out.Diagnostics) != 0 {
		t.Fatalf("Render with no skew = %+v, %v", out, err)
	}
}

func TestRenderCatalogErrors(t *testing.T) {
	p := build(t)
	cases := []struct {
		name, body string
		want       []kernel.CatalogError
	}{
		{"lacked", `name: "shop"
requires: "example.com/other@v1": "v1.0.0"`, []kernel.CatalogError{{Path: "example.com/other@v1", Rule: "is not carried by platform acme", Position: "shop.cue:4:11"}}},
		{"disabled", `name: "shop"
requires: "` + dbPath + `": "v0.1.0"
components: db: {kind: "Database", catalog: "` + dbPath + `"}`, []kernel.CatalogError{{Path: dbPath, Rule: "is disabled on platform acme", Position: "shop.cue:4:11"}}},
		{"kind not provided", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: job: {kind: "CronJob", catalog: "` + webPath + `"}`, []kernel.CatalogError{{Path: webPath, Component: "job", Rule: "does not provide kind CronJob (it provides [Deployment Service])", Position: "shop.cue:5:19"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(c.body)}})
			var got []kernel.CatalogError
			for _, e := range joined(err) {
				var ce *kernel.CatalogError
				if !errors.As(e, &ce) {
					t.Fatalf("Render = %v, want *CatalogError", err)
				}
				got = append(got, *ce)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("catalog errors %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestRenderWrongInstance: each wrong instance is a *kernel.Error naming
// the instance file and line of the problem.
func TestRenderWrongInstance(t *testing.T) {
	p := build(t)
	cases := []struct{ name, body, want string }{
		{"unknown field", `name: "shop"
colour: "blue"`, "shop.cue:4"},
		{"bad component name", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: Web_1: {kind: "Service", catalog: "` + webPath + `"}`, "shop.cue:5"},
		{"unknown component field", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", image: "x"}`, "shop.cue:5"},
		{"catalog not required", `name: "shop"
components: web: {kind: "Service", catalog: "` + webPath + `"}`, "shop.cue:4"},
		{"bad required version", `name: "shop"
requires: "` + webPath + `": "v2.0.0"`, "shop.cue:4"},
		{"bad required version without v", `name: "shop"
requires: "` + webPath + `": "2.0.0"`, `shop.cue:4:11: requires."` + webPath + `": version "2.0.0" must have the major version of the path, v1`},
		{"non-concrete spec", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", spec: port: int}`, "shop.cue:5"},
		{"negative replicas", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", replicas: -1}`, "shop.cue:5"},
		{"label conflicts with the platform", `name: "shop"
labels: team: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `"}`, "shop.cue:4"},
		{"component label conflicts with the instance's", `name: "shop"
labels: tier: "web"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", labels: tier: "db"}`, "shop.cue:6"},
		{"spec replicas disagree", `name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `", replicas: 2, spec: replicas: 3}`, "shop.cue:5"},
		{"label conflicts, no components", `name: "shop"
labels: team: "shop"`, "shop.cue:4"},
		{"missing name", `requires: {}`, "name"},
		{"syntax", `name: "shop`, "shop.cue:3"},
	}
	for _, v := range badVersions {
		cases = append(cases, struct{ name, body, want string }{fmt.Sprintf("required version %q", v), `name: "shop"
requires: "` + webPath + `": ` + strconv.Quote(v), `shop.cue:4:11: requires."` + webPath + `": version ` + strconv.Quote(v)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(c.body)}})
			var ke *kernel.Error
			if !errors.As(err, &ke) || ke.Op != "render" {
				t.Fatalf("Render = %v, want a render *kernel.Error", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error does not mention %q:\n%v", c.want, err)
			}
		})
	}
	// The conflicting label names the platform's file too.
	_, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"
labels: team: "shop"
requires: "` + webPath + `": "v1.0.0"
components: web: {kind: "Service", catalog: "` + webPath + `"}`)}})
	if err == nil || !strings.Contains(err.Error(), "platform.cue:") {
		t.Fatalf("label conflict %v does not name the platform's file", err)
	}
}

func TestRenderMisuse(t *testing.T) {
	p := build(t)
	k := kernel.New()
	for name, in := range map[string]kernel.RenderInput{
		"no platform":   {Instance: kernel.Instance{Files: instance(`name: "x"`)}},
		"no instance":   {Platform: p},
		"both":          {Platform: p, Instance: kernel.Instance{Dir: ".", Files: instance(`name: "x"`)}},
		"no module":     {Platform: p, Instance: kernel.Instance{Files: map[string][]byte{"a.cue": []byte(`name: "x"`)}}},
		"bad path":      {Platform: p, Instance: kernel.Instance{Files: map[string][]byte{"../a.cue": nil}}},
		"deps":          {Platform: p, Instance: kernel.Instance{Files: map[string][]byte{"cue.mod/module.cue": []byte(instanceModule + "deps: \"x.com/y@v0\": v: \"v0.1.0\"\n"), "a.cue": []byte("package a\nname: \"x\"\n")}}},
		"missing dir":   {Platform: p, Instance: kernel.Instance{Dir: "/nonexistent/instance"}},
		"platform gone": {Platform: &kernel.Platform{Name: "gone", Dir: "/nonexistent/platform"}, Instance: kernel.Instance{Files: instance(`name: "x"`)}},
	} {
		if out, err := k.Render(context.Background(), in); err == nil {
			t.Errorf("%s: Render = %+v, want an error", name, out)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestRenderHonoursContext(t *testing.T) {
	p := build(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := kernel.New().Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "x"`)}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Render with a cancelled context = %v", err)
	}
}

func TestSkewPolicy(t *testing.T) {
	for s, want := range map[string]kernel.SkewPolicy{"": kernel.SkewWarn, "Warn": kernel.SkewWarn, "Refuse": kernel.SkewRefuse} {
		if got, err := kernel.ParseSkewPolicy(s); err != nil || got != want {
			t.Fatalf("ParseSkewPolicy(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := kernel.ParseSkewPolicy("refuse"); err == nil || !strings.Contains(err.Error(), `"refuse"`) {
		t.Fatalf("ParseSkewPolicy(refuse) = %v, want an error naming it", err)
	}
	var zero kernel.SkewPolicy
	if zero != kernel.SkewWarn || zero.String() != "Warn" || kernel.SkewRefuse.String() != "Refuse" {
		t.Fatal("SkewWarn must be the zero value")
	}
}
