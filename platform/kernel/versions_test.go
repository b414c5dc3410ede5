package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"pgregory.net/rapid"
)

// badVersions are refused wherever a catalog version is read.
var badVersions = []string{"", "01.2.3", "v1.2", "1.2", "1.2.3.4", "V1.2.3", " 1.2.3", "1.2.3 ", "v1.2.3\n", "1.2.3-01", "1.2.3+"}

// TestMinimalInputRenders: the input the design pins, a catalog with a
// path and a version without a 'v' and no kinds, generates a module that
// builds, and an instance using any kind of that catalog renders.
func TestMinimalInputRenders(t *testing.T) {
	const web = "example.com/web@v1"
	dir := generated(t, platformmodule.Input{Name: "p", Catalogs: []platformmodule.Catalog{{Path: web, Version: "1.0.0"}}})
	p, err := kernel.New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := p.Catalog(web)
	if !ok || c.Version != "1.0.0" || !c.Enabled || len(c.Kinds) != 0 {
		t.Fatalf("catalog %+v (found %v), want version 1.0.0 as written, enabled, no kinds", c, ok)
	}
	out, err := kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"
requires: "` + web + `": "v1.0.0"
components: a: {kind: "Deployment", catalog: "` + web + `"}
components: b: {kind: "AnythingAtAll", catalog: "` + web + `"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Resources) != 2 || out.Resources[0].Kind != "Deployment" || out.Resources[1].Kind != "AnythingAtAll" || len(out.Diagnostics) != 0 {
		t.Fatalf("output %+v", out)
	}
	ann := out.Resources[0].Object["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann["platform.leasekit.dev/catalog-version"] != "1.0.0" {
		t.Fatalf("annotations %v, want the platform's version as written, 1.0.0", ann)
	}
}

// skewCase is a catalog version a platform carries and one an instance
// requires, and whether the instance's is newer as Semantic Versioning
// orders them.
type skewCase struct {
	platform, instance string
	newer              bool
}

var skewCases = []skewCase{
	{"1.4.2", "v1.4.2", false},
	{"v1.4.2", "1.4.2", false},
	{"v1.4.2", "1.4.3", true},
	{"1.4.3", "v1.4.2", false},
	{"1.4.2", "v1.4.3", true},
	{"v1.4.2", "1.10.0", true},
	{"1.4.2-rc.1", "v1.4.2", true},
	{"v1.4.2", "1.4.2-rc.1", false},
	{"1.4.2-rc.2", "v1.4.2-rc.10", true},
	{"1.4.2+build.1", "v1.4.2+build.2", false},
	{"v1.4.2+build.2", "1.4.2", false},
}

// TestSkewSpellings: a version with a 'v' and one without compare as
// Semantic Versioning says, under both policies, and every result carries
// the versions as they were written.
func TestSkewSpellings(t *testing.T) {
	for _, c := range skewCases {
		t.Run(fmt.Sprintf("%s vs %s", c.platform, c.instance), func(t *testing.T) {
			checkSkew(t, t.TempDir(), c)
		})
	}
}

// TestSkewProperty draws versions of both spellings for the platform and
// the instance and checks the skew results against a plain model of
// Semantic Versioning's order.
func TestSkewProperty(t *testing.T) {
	tmp := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		pv, pk := drawVersion(t, "platform")
		iv, ik := drawVersion(t, "instance")
		checkSkew(t, tmp, skewCase{pv, iv, ik.newer(pk)})
	})
}

// A versionKey is a drawn version without its spelling: the parts
// Semantic Versioning orders by.
type versionKey struct {
	minor, patch int
	pre          int // 0: a release; n: the prerelease "rc.n"
}

func (a versionKey) newer(b versionKey) bool {
	switch {
	case a.minor != b.minor:
		return a.minor > b.minor
	case a.patch != b.patch:
		return a.patch > b.patch
	case (a.pre == 0) != (b.pre == 0):
		return a.pre == 0
	}
	return a.pre > b.pre
}

func drawVersion(t *rapid.T, label string) (string, versionKey) {
	k := versionKey{rapid.IntRange(0, 3).Draw(t, label+" minor"), rapid.IntRange(0, 3).Draw(t, label+" patch"), rapid.IntRange(0, 3).Draw(t, label+" prerelease")}
	s := fmt.Sprintf("%s1.%d.%d", rapid.SampledFrom([]string{"", "v"}).Draw(t, label+" v"), k.minor, k.patch)
	if k.pre > 0 {
		s += fmt.Sprintf("-rc.%d", k.pre)
	}
	return s + rapid.SampledFrom([]string{"", "+build.1", "+build.2"}).Draw(t, label+" build"), k
}

// checkSkew renders an instance requiring c.instance against a platform
// carrying c.platform, generated in a new directory under tmp, under both
// policies.
func checkSkew(t interface {
	Helper()
	Fatalf(string, ...any)
}, tmp string, c skewCase) {
	t.Helper()
	const web = "example.com/web@v1"
	files, err := platformmodule.Generate(platformmodule.Input{Name: "p", Catalogs: []platformmodule.Catalog{{Path: web, Version: c.platform}}})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	dir, err := os.MkdirTemp(tmp, "platform")
	if err != nil {
		t.Fatalf("%v", err)
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := errors.Join(os.MkdirAll(filepath.Dir(p), 0o755), os.WriteFile(p, data, 0o644)); err != nil {
			t.Fatalf("%v", err)
		}
	}
	p, err := kernel.New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatalf("BuildPlatform: %v", err)
	}
	in := kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: instance(`name: "shop"
requires: "` + web + `": "` + c.instance + `"
components: a: {kind: "Service", catalog: "` + web + `"}`)}}

	in.Skew = kernel.SkewWarn
	out, err := kernel.New().Render(context.Background(), in)
	if err != nil {
		t.Fatalf("Render under SkewWarn: %v", err)
	}
	want := []kernel.Diagnostic{}
	if c.newer {
		want = append(want, kernel.Diagnostic{Severity: "warning", Path: web, InstanceVersion: c.instance, PlatformVersion: c.platform, Newer: true})
	}
	if len(out.Diagnostics) != len(want) {
		t.Fatalf("%s against %s: diagnostics %+v, want %+v", c.instance, c.platform, out.Diagnostics, want)
	}
	for i, d := range out.Diagnostics {
		d.Message = ""
		if d != want[i] {
			t.Fatalf("%s against %s: diagnostic %+v, want %+v", c.instance, c.platform, d, want[i])
		}
	}

	in.Skew = kernel.SkewRefuse
	_, err = kernel.New().Render(context.Background(), in)
	var se *kernel.SkewError
	switch {
	case !c.newer && err != nil:
		t.Fatalf("%s against %s under SkewRefuse: %v, want no skew", c.instance, c.platform, err)
	case c.newer && (!errors.As(err, &se) || *se != kernel.SkewError{Path: web, InstanceVersion: c.instance, PlatformVersion: c.platform}):
		t.Fatalf("%s against %s under SkewRefuse: %v, want a *SkewError with both versions as written", c.instance, c.platform, err)
	}
}
