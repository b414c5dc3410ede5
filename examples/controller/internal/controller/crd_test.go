package controller_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"leasekit.dev/platform/platformmodule"
)

// catalogSchema returns the admission schema of one spec.catalogs item of
// the generated Platform CRD.
func catalogSchema(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "examples.leasekit.dev_platforms.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	node := any(crd)
	for _, key := range []string{"spec", "versions", "0", "schema", "openAPIV3Schema", "properties", "spec", "properties", "catalogs", "items"} {
		switch n := node.(type) {
		case map[string]any:
			node = n[key]
		case []any:
			node = n[0]
		}
	}
	item, ok := node.(map[string]any)
	if !ok {
		t.Fatal("the Platform CRD has no schema for spec.catalogs items")
	}
	return item
}

// admits reports whether the string schema s admits v: its pattern and
// length bounds, as the API server applies them.
func admits(s map[string]any, v string) bool {
	if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
		return false
	}
	if n, ok := s["maxLength"].(float64); ok && len(v) > int(n) {
		return false
	}
	if n, ok := s["minLength"].(float64); ok && len(v) < int(n) {
		return false
	}
	return true
}

// generates reports whether the platform generator accepts a catalog with
// version and kinds.
func generates(version string, kinds []string) error {
	major := "v1"
	if m := regexp.MustCompile(`^v?([0-9]+)\.`).FindStringSubmatch(version); m != nil {
		major = "v" + m[1]
	}
	_, err := platformmodule.Generate(platformmodule.Input{
		Name:     "acme",
		Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@" + major, Version: version, Kinds: kinds}},
	})
	return err
}

// Admission and the generator agree on a catalog's version: the CRD
// admits exactly the versions the generator accepts, so "1.4" fails at
// kubectl apply and not at the next reconcile. Kinds are optional in both,
// and a kind admission admits the generator accepts.
func TestCRDAgreesWithTheGenerator(t *testing.T) {
	item := catalogSchema(t)
	props := item["properties"].(map[string]any)
	version := props["version"].(map[string]any)
	kinds := props["kinds"].(map[string]any)
	kind := kinds["items"].(map[string]any)
	for _, req := range item["required"].([]any) {
		if req == "kinds" {
			t.Error("the CRD requires kinds; the generator does not")
		}
	}
	if generates("v1.4.0", nil) != nil {
		t.Error("the generator refuses a catalog without kinds")
	}

	for _, v := range []string{"1.4", "v1.4", "1.4.2", "v1.4.2", "V1.4.2", "v01.4.2", "v1.4.2-rc.1", "1.0.0+build.5", "v1.2.3-", "v1.2.3-01", " v1.2.3", "v1.2.3\n", "v0.0.0"} {
		if a, g := admits(version, v), generates(v, nil); a != (g == nil) {
			t.Errorf("version %q: admitted %v, generator: %v", v, a, g)
		}
	}
	for _, k := range []string{"Deployment", "deployment", "Web-App", "A", "A1", "", "Ünicode"} {
		if admits(kind, k) && generates("v1.0.0", []string{k}) != nil {
			t.Errorf("kind %q: admitted, but the generator refuses it: %v", k, generates("v1.0.0", []string{k}))
		}
	}

	// A catalog's path: the pattern admits exactly the paths the generator
	// accepts, but for the device names Windows reserves, which a CEL rule
	// refuses (the envtest suite checks it at the API server).
	path := props["path"].(map[string]any)
	generatesPath := func(p string) error {
		_, err := platformmodule.Generate(platformmodule.Input{
			Name:     "acme",
			Catalogs: []platformmodule.Catalog{{Path: p, Version: "v1.0.0"}},
		})
		return err
	}
	for _, p := range []string{"example.com/catalogs/web@v1", "example.com/catalogs/web", "catalogs/web@v1", "Example.com/web@v1",
		"example.com/web@v01", "example.com/web@v1.2", "example.com//web@v1", "example.com/web/@v1", "example.com/we__b@v1",
		"example.com/we._b@v1", "ex-ample.com/web@v1", "ex_ample.com/web@v1", "-example.com/web@v1", "example.com/.web@v1",
		"example.com/web_@v1", "example.com/w~b@v1", "a.b@v1", "a.b/c---d@v1"} {
		if a, g := admits(path, p), generatesPath(p); a != (g == nil) {
			t.Errorf("path %q: admitted %v, generator: %v", p, a, g)
		}
	}

	rapid.Check(t, func(t *rapid.T) {
		p := rapid.StringOfN(rapid.SampledFrom([]rune("ab0./_-@vA")), 0, 16, -1).Draw(t, "path")
		if a, g := admits(path, p), generatesPath(p); a != (g == nil) {
			t.Fatalf("path %q: admitted %v, generator: %v", p, a, g)
		}
		v := rapid.StringOfN(rapid.SampledFrom([]rune("v0123456789.-+aZ")), 0, 16, -1).Draw(t, "version")
		if a, g := admits(version, v), generates(v, nil); a != (g == nil) {
			t.Fatalf("version %q: admitted %v, generator: %v", v, a, g)
		}
		k := rapid.StringOfN(rapid.SampledFrom([]rune("Aa0-_Zz.")), 0, 8, -1).Draw(t, "kind")
		if g := generates("v1.0.0", []string{k}); admits(kind, k) && g != nil {
			t.Fatalf("kind %q: admitted, but the generator refuses it: %v", k, g)
		}
	})
}
