package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

// TestAssembleMatchesRender: for any instance, a render assembled in Go
// is exactly the render #Render evaluates, and it falls back to #Render
// only for an instance that fails to render or whose spec sets replicas.
// Render's result, resources or error, is #Render's in every case.
func TestAssembleMatchesRender(t *testing.T) {
	platforms := testPlatforms(t)
	ctx := context.Background()
	limits := Limits{}.mustResolve()
	assembled := 0
	rapid.Check(t, func(t *rapid.T) {
		p := platforms[rapid.SampledFrom([]string{"bare", "labeled", "typed"}).Draw(t, "platform")]
		body, specReplicas := drawInstance(t)
		in := RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
			modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
			"shop.cue":         []byte(body),
		}}}

		r, err := prepare(ctx, limits, in, false)
		if err != nil {
			t.Skipf("refused before evaluation: %v", err)
		}
		fast, ok, ferr := assemble(ctx, p, r)
		if ferr != nil {
			t.Fatalf("assemble: %v\n%s", ferr, body)
		}
		r, err = prepare(ctx, limits, in, false)
		if err != nil {
			t.Fatal(err)
		}
		var want RenderOutput
		e, werr := evaluateRender(ctx, in, r)
		if werr == nil {
			want = RenderOutput{Instance: e.instance, Diagnostics: e.diagnostics}
			if want.Resources, werr = decodeResources(e.render, e.written); werr != nil {
				t.Fatal(werr)
			}
		}
		switch {
		case ok && werr != nil:
			t.Fatalf("assembled a render #Render refuses: %v\n%s", werr, body)
		case ok:
			assembled++
			if !reflect.DeepEqual(fast, want) {
				got, _ := json.Marshal(fast)
				exp, _ := json.Marshal(want)
				t.Fatalf("assembled render differs from #Render's\n#Render:   %s\nassembled: %s\ninstance:\n%s", exp, got, body)
			}
		case werr == nil && !specReplicas:
			t.Fatalf("fell back to #Render for an instance that renders:\n%s", body)
		}

		got, gerr := New().Render(ctx, in)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("Render's error %v, #Render's %v\n%s", gerr, werr, body)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Render's output differs from #Render's\n%s", body)
		}
	})
	t.Logf("%d assembled", assembled)
	if assembled == 0 {
		t.Error("no generated instance was assembled")
	}
}

// drawInstance draws an instance module's CUE source, whose labels may
// conflict with each other and the platform's, and reports whether a
// component's spec sets replicas.
func drawInstance(t *rapid.T) (string, bool) {
	var b strings.Builder
	b.WriteString("package shop\n\nname: \"shop\"\nrequires: \"example.com/catalogs/web@v1\": \"v1.0.0\"\n")
	if rapid.Bool().Draw(t, "namespace") {
		b.WriteString("namespace: \"prod\"\n")
	}
	fmt.Fprintf(&b, "labels: %s\n", labelsJSON(t, "instanceLabels"))
	specReplicas := false
	for i := range rapid.IntRange(0, 4).Draw(t, "components") {
		fmt.Fprintf(&b, "components: c%d: {\n\tkind: %q, catalog: \"example.com/catalogs/web@v1\"\n",
			i, rapid.SampledFrom([]string{"Deployment", "Service"}).Draw(t, "kind"))
		if rapid.Bool().Draw(t, "replicas") {
			fmt.Fprintf(&b, "\treplicas: %d\n", rapid.IntRange(0, 5).Draw(t, "n"))
		}
		if rapid.Bool().Draw(t, "hasLabels") {
			fmt.Fprintf(&b, "\tlabels: %s\n", labelsJSON(t, "componentLabels"))
		}
		if rapid.Bool().Draw(t, "hasSpec") {
			spec := jsonStruct(t, 2)
			if rapid.Bool().Draw(t, "specReplicas") {
				spec[replicasField] = rapid.IntRange(0, 2).Draw(t, "specReplicasValue")
				specReplicas = true
			}
			data, err := json.Marshal(spec)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "\tspec: %s\n", data)
		}
		switch rapid.IntRange(0, 7).Draw(t, "oddity") {
		case 1:
			b.WriteString("\tspec: port: int\n") // not concrete
		case 2:
			b.WriteString("\timage: \"x\"\n") // not a field of a component
		case 3:
			b.WriteString("\tspec: size: #Size\n") // a definition of the instance
		case 4:
			b.WriteString("\tspec: sized: _size\n") // a hidden field of the instance
		}
		b.WriteString("}\n")
	}
	switch rapid.IntRange(0, 3).Draw(t, "helpers") {
	case 1:
		b.WriteString("#Size: \"small\" | \"large\"\n#Open: {a: int}\n_size: \"small\"\n") // not concrete, never rendered
	case 2:
		b.WriteString("#Size: \"small\"\n_size: \"large\"\n")
	}
	return b.String(), specReplicas
}

// TestRenderUsesWhatTheBuildDecoded: a render carries what the platform's
// directory holds, whether it is assembled from what the build decoded or
// evaluated from the directory: not the Platform's fields as a caller
// changed them, nor less for a Platform no build returned.
func TestRenderUsesWhatTheBuildDecoded(t *testing.T) {
	ctx := context.Background()
	p := labeledPlatform(t)
	in := func(p *Platform) RenderInput {
		return RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
			modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
			"shop.cue": []byte(`package shop
name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Service", catalog: "example.com/catalogs/web@v1", spec: port: 80}
`),
		}}}
	}
	want, err := New().Render(ctx, in(p))
	if err != nil {
		t.Fatal(err)
	}
	labels := want.Resources[0].Object["metadata"].(map[string]any)["labels"].(map[string]any)
	if labels["team"] != "platform" || labels["platform.leasekit.dev/name"] != "labeled" {
		t.Fatalf("labels %v", labels)
	}

	// A Platform a caller wrote field by field, without what the build
	// decoded: rendered by #Render from the directory.
	copied := &Platform{Name: p.Name, Type: p.Type, Module: p.Module, Labels: p.Labels,
		Catalogs: p.Catalogs, Dir: p.Dir, Digest: p.Digest}
	if got, err := New().Render(ctx, in(copied)); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Render of a copied Platform = %+v, %v; want %+v", got, err, want)
	}

	// The Platform's fields changed after the build.
	p.Name, p.Type = "other", "edge"
	p.Labels["team"] = "changed"
	p.Catalogs[0].Version = "v1.9.0"
	if got, err := New().Render(ctx, in(p)); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Render after the Platform's fields changed = %+v, %v; want %+v", got, err, want)
	}
}

// TestAssembleTakesDefaults: a value concrete through its default renders
// as #Render evaluates it, whether the render is assembled or evaluated.
func TestAssembleTakesDefaults(t *testing.T) {
	p := buildTestPlatform(t, "bare", "")
	ctx := context.Background()
	for _, tc := range []struct {
		field string
		want  any
	}{
		{`replicas: *3 | int`, 3.0},
		{`replicas: *0 | 1`, 0.0},
		{`replicas: *2 | >=1`, 2.0},
		{`replicas?: 3`, 1.0},
	} {
		in := RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
			modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
			"shop.cue": []byte("package shop\nname: \"shop\"\nrequires: \"example.com/catalogs/web@v1\": \"v1.0.0\"\n" +
				"components: web: {kind: \"Service\", catalog: \"example.com/catalogs/web@v1\", " + tc.field + "}\n"),
		}}}
		out, err := New().Render(ctx, in)
		if err != nil {
			t.Fatalf("%s: %v", tc.field, err)
		}
		if got := out.Resources[0].Object["spec"].(map[string]any)[replicasField]; got != tc.want {
			t.Errorf("%s: rendered replicas %v, want %v", tc.field, got, tc.want)
		}
	}
}
