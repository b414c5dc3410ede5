package kernel

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"cuelang.org/go/cue"
	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

// TestDecodeMatchesExport: for any instance that renders, the resources
// Render decodes are exactly what encoding/json decodes from a generic
// export of #Render's resources. It holds the decoder, which reads labels
// and specs by key, to the vocabulary in render.cue.
func TestDecodeMatchesExport(t *testing.T) {
	platforms := testPlatforms(t)
	rendered := 0
	rapid.Check(t, func(t *rapid.T) {
		p := platforms[rapid.SampledFrom([]string{"bare", "labeled", "typed"}).Draw(t, "platform")]
		body, _ := drawInstance(t)
		in := RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
			modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
			"shop.cue":         []byte(body),
		}}}
		e, err := evaluate(context.Background(), Limits{}.mustResolve(), in)
		if err != nil {
			t.Skipf("does not render: %v", err) // conflicting labels
		}
		rendered++
		got, err := decodeResources(e.render, e.written)
		if err != nil {
			t.Fatalf("decodeResources: %v\n%s", err, body)
		}
		data, err := e.render.LookupPath(cue.ParsePath("resources")).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		gotObjects := map[string]map[string]any{}
		for _, r := range got {
			gotObjects[r.Component] = r.Object
		}
		if !reflect.DeepEqual(want, gotObjects) {
			gotJSON, _ := json.Marshal(gotObjects)
			t.Fatalf("decoded resources differ from the export\nexport:  %s\ndecoded: %s\ninstance:\n%s", data, gotJSON, body)
		}
	})
	if rendered == 0 {
		t.Error("no generated instance rendered")
	}
}

// labelsJSON draws a label map whose keys may be those the platform or
// the render set, with their values or others.
func labelsJSON(t *rapid.T, label string) string {
	keys := []string{"team", "example.com/tier", "app.kubernetes.io/part-of", "app.kubernetes.io/name",
		"app.kubernetes.io/managed-by", "a", "b.c/d"}
	values := []string{"platform", "gold", "shop", "leasekit", "c0", "x", ""}
	m := rapid.MapOfN(rapid.SampledFrom(keys), rapid.SampledFrom(values), 0, 3).Draw(t, label)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// jsonStruct draws a JSON object of any values, nested up to depth.
func jsonStruct(t *rapid.T, depth int) map[string]any {
	keys := rapid.SampledFrom([]string{"image", "port", "a.b", "x/y", "ünï", "quote\"d", "new\nline", "replicas_", "0", ""})
	m := map[string]any{}
	for range rapid.IntRange(0, 4).Draw(t, "fields") {
		m[keys.Draw(t, "key")] = jsonValue(t, depth)
	}
	return m
}

func jsonValue(t *rapid.T, depth int) any {
	kinds := []string{"string", "int", "bigint", "float", "bool", "null"}
	if depth > 0 {
		kinds = append(kinds, "list", "struct")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "kind") {
	case "string":
		return rapid.SampledFrom([]string{"", "app:1", "<&>", "tab\tand\u00e9", "\\(x)", "💡"}).Draw(t, "s")
	case "int":
		return rapid.IntRange(-1<<53, 1<<53).Draw(t, "i")
	case "bigint":
		return json.Number(rapid.SampledFrom([]string{"9007199254740993", "123456789012345678901234567890", "-9223372036854775808"}).Draw(t, "big"))
	case "float":
		return json.Number(rapid.SampledFrom([]string{"1.5", "0.1", "1e300", "-2.5e-10", "3.0"}).Draw(t, "f"))
	case "bool":
		return rapid.Bool().Draw(t, "b")
	case "list":
		var l []any
		for range rapid.IntRange(0, 3).Draw(t, "len") {
			l = append(l, jsonValue(t, depth-1))
		}
		return l
	case "struct":
		return jsonStruct(t, depth-1)
	}
	return nil
}

// testPlatforms builds the platforms the differential tests render
// against, by name: one bare, one labeled, one typed and labeled.
func testPlatforms(t *testing.T) map[string]*Platform {
	t.Helper()
	platforms := map[string]*Platform{}
	for name, labels := range map[string]string{
		"bare":    "",
		"labeled": `labels: {team: "platform", "example.com/tier": "gold"}`,
		"typed":   `type: "edge"` + "\n" + `labels: "app.kubernetes.io/part-of": "shop"`,
	} {
		platforms[name] = buildTestPlatform(t, name, labels)
	}
	return platforms
}

// labeledPlatform builds a platform that carries the web catalog and a
// team label.
func labeledPlatform(t *testing.T) *Platform {
	t.Helper()
	return buildTestPlatform(t, "labeled", `labels: {team: "platform"}`)
}

// buildTestPlatform builds a platform that carries the web catalog, with
// the given fields.
func buildTestPlatform(t *testing.T, name, fields string) *Platform {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		modread.ModuleFile: "module: \"platform.leasekit.dev/" + name + "@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"platform.cue": "package platform\n\nname: \"" + name + "\"\n" + fields +
			"\ncatalogs: \"example.com/catalogs/web@v1\": {version: \"v1.4.0\", kinds: [\"Deployment\", \"Service\"]}\n",
	}
	writeFiles(t, dir, files)
	p, err := New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
