package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/internal/testkit/depth"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

var (
	depPaths = []string{webPath, dbPath, batchPath, "example.com/catalogs/mq@v1", "example.com/catalogs/cache@v3"}
	depKinds = []string{"Deployment", "Service", "Database", "CronJob"}
)

// depVersion returns a version of the catalog at path, with its major.
func depVersion(t *rapid.T, path, label string) string {
	major := path[strings.LastIndex(path, "@v")+2:]
	return fmt.Sprintf(rapid.SampledFrom([]string{"v%s.0.0", "v%s.1.0", "%s.1.0", "v%s.2.0-rc.1"}).Draw(t, label), major)
}

// depForms are the ways the differential test writes an instance's
// requires, and whether a parse can tell which catalogs it names.
var depForms = []struct {
	name  string
	known bool
	write func(req map[string]string) map[string]string // file name to body after the package clause
}{
	{"struct", true, func(req map[string]string) map[string]string {
		var b strings.Builder
		for _, p := range slices.Sorted(maps.Keys(req)) {
			fmt.Fprintf(&b, "\t%q: %q\n", p, req[p])
		}
		return map[string]string{"shop.cue": "requires: {\n" + b.String() + "}\n"}
	}},
	{"shorthand, with a let, a comment and a pattern", true, func(req map[string]string) map[string]string {
		body := "let v = \"unused\"\n_v: v\n// the catalogs\nrequires: [string]: string\n"
		for _, p := range slices.Sorted(maps.Keys(req)) {
			body += fmt.Sprintf("requires: %q: %q\n", p, req[p])
		}
		return map[string]string{"shop.cue": body}
	}},
	{"split across files", true, func(req map[string]string) map[string]string {
		files := map[string]string{"shop.cue": "requires: {}\n"}
		for i, p := range slices.Sorted(maps.Keys(req)) {
			files[fmt.Sprintf("req%d.cue", i)] = fmt.Sprintf("requires: %q: %q\n", p, req[p])
		}
		return files
	}},
	{"in an embedding", false, func(req map[string]string) map[string]string {
		body := "{requires: {}}\n"
		for _, p := range slices.Sorted(maps.Keys(req)) {
			body += fmt.Sprintf("{requires: %q: %q}\n", p, req[p])
		}
		return map[string]string{"shop.cue": body}
	}},
	{"by a comprehension", false, func(req map[string]string) map[string]string {
		j, _ := json.Marshal(req)
		return map[string]string{"shop.cue": fmt.Sprintf("_req: %s\nfor p, v in _req {requires: (p): v}\n", j)}
	}},
	{"by a dynamic label", false, func(req map[string]string) map[string]string {
		body := "requires: {}\n"
		for i, p := range slices.Sorted(maps.Keys(req)) {
			body += fmt.Sprintf("_p%d: %q\nrequires: {(_p%d): %q}\n", i, p, i, req[p])
		}
		return map[string]string{"shop.cue": body}
	}},
}

// A render reads of its platform only its dependency set: rendered
// against the platform projected to that set alone (its name, type and
// labels, and the catalogs the instance reads as the set has them), over
// random platforms, instances written in several forms and skew policies,
// it gives the same result, byte for byte, both evaluating #Render and by
// its fast path; and the projection's set is the same set. A result that
// names the platform's directory is left out: that directory is in the
// set. ReadsOf knows the catalogs exactly where a parse can tell, and
// falls back to every catalog where it cannot.
func TestRenderReadsOnlyItsDependencies(t *testing.T) {
	var compared, rendered, named atomic.Int64
	base := t.TempDir()
	k := kernel.New()
	ctx := context.Background()
	build := func(t *rapid.T, in platformmodule.Input, extra string) *kernel.Platform {
		files, err := platformmodule.Generate(in)
		if err != nil {
			t.Fatalf("generating %+v: %v", in, err)
		}
		if extra != "" {
			files["extra.cue"] = []byte("package platform\n\n" + extra)
		}
		dir, err := os.MkdirTemp(base, "platform")
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for name, data := range files {
			m[name] = string(data)
		}
		kernel.WriteFiles(t, dir, m)
		p, err := k.BuildPlatform(ctx, dir)
		if err != nil {
			t.Fatalf("building %+v: %v", in, err)
		}
		return p
	}
	rapid.Check(t, func(t *rapid.T) {
		in := platformmodule.Input{
			Name:   rapid.SampledFrom([]string{"acme", "zenith"}).Draw(t, "name"),
			Type:   rapid.SampledFrom([]string{"", "standard", "edge"}).Draw(t, "type"),
			Labels: map[string]string{},
		}
		for _, key := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"team", "tier"}), rapid.ID).Draw(t, "labels") {
			in.Labels[key] = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "value")
		}
		for _, path := range rapid.SliceOfNDistinct(rapid.SampledFrom(depPaths), 3, len(depPaths), rapid.ID).Draw(t, "catalogs") {
			c := platformmodule.Catalog{Path: path, Version: depVersion(t, path, "version"), Disabled: rapid.IntRange(0, 7).Draw(t, "disabled") == 0}
			if rapid.Bool().Draw(t, "someKinds") {
				c.Kinds = rapid.SliceOfDistinct(rapid.SampledFrom(depKinds), rapid.ID).Draw(t, "kinds")
			}
			in.Catalogs = append(in.Catalogs, c)
		}
		extra := rapid.SampledFrom([]string{"", "_unread: 1\n", "#Unread: {x: 1}\n"}).Draw(t, "extra")
		full := build(t, in, extra)

		req := map[string]string{}
		for _, path := range rapid.SliceOfNDistinct(rapid.SampledFrom(depPaths), 1, 3, rapid.ID).Draw(t, "requires") {
			req[path] = depVersion(t, path, "want")
		}
		body := "name: \"shop\"\n"
		for i := range rapid.IntRange(0, 3).Draw(t, "components") {
			catalog := rapid.SampledFrom(slices.Sorted(maps.Keys(req))).Draw(t, "catalog")
			if rapid.IntRange(0, 11).Draw(t, "unrequired") == 0 {
				catalog = rapid.SampledFrom(depPaths).Draw(t, "anyCatalog")
			}
			body += fmt.Sprintf("components: c%d: {kind: %q, catalog: %q}\n", i, rapid.SampledFrom(depKinds).Draw(t, "kind"), catalog)
		}
		if rapid.Bool().Draw(t, "labelled") {
			body += fmt.Sprintf("labels: team: %q\n", rapid.SampledFrom([]string{"a", "b"}).Draw(t, "team"))
		}
		form := depForms[rapid.IntRange(0, len(depForms)-1).Draw(t, "form")]
		files := instance(body)
		for name, src := range form.write(req) {
			if name == "shop.cue" {
				src = string(files["shop.cue"]) + src
			} else {
				src = "package shop\n\n" + src
			}
			files[name] = []byte(src)
		}
		skew := rapid.SampledFrom([]kernel.SkewPolicy{kernel.SkewWarn, kernel.SkewRefuse}).Draw(t, "skew")

		reads := kernel.ReadsOf(files)
		paths, known := reads.Catalogs()
		if known != form.known || known && !slices.Equal(paths, slices.Sorted(maps.Keys(req))) {
			t.Fatalf("ReadsOf of requires written %s: %v, known %v; want %v, known %v", form.name, paths, known, slices.Sorted(maps.Keys(req)), form.known)
		}
		name, typ, labels, catalogs := kernel.Projection(reads, full, skew)
		pin := platformmodule.Input{Name: name, Type: typ, Labels: labels}
		for _, c := range catalogs {
			pin.Catalogs = append(pin.Catalogs, platformmodule.Catalog{Path: c.Path, Version: c.Version, Kinds: c.Kinds, Disabled: !c.Enabled})
		}
		projected := build(t, pin, "")
		if a, b := reads.Dependencies(full, skew), reads.Dependencies(projected, skew); a != b {
			t.Fatalf("the projection's dependencies %s, the platform's %s", b, a)
		}
		for _, evaluated := range []bool{false, true} {
			render := func(p *kernel.Platform) (string, error, bool) {
				out, err := k.RenderSlowly(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: files}, Skew: skew}, false, evaluated)
				data, jerr := json.Marshal(out)
				if jerr != nil {
					t.Fatal(jerr)
				}
				return string(data), err, err != nil && strings.Contains(err.Error(), p.Dir)
			}
			a, aerr, anamed := render(full)
			b, berr, bnamed := render(projected)
			if anamed || bnamed {
				named.Add(1)
				continue
			}
			compared.Add(1)
			if aerr == nil {
				rendered.Add(1)
			}
			if a != b || fmt.Sprint(aerr) != fmt.Sprint(berr) || fmt.Sprintf("%T", aerr) != fmt.Sprintf("%T", berr) {
				t.Fatalf("render (evaluated %v) of\n%s\nagainst the platform: %s, %v\nagainst its projection: %s, %v", evaluated, files["shop.cue"], a, aerr, b, berr)
			}
		}
	})
	t.Logf("%d renders compared (%d rendered, the rest failed alike), %d left out as they name the platform's directory", compared.Load(), rendered.Load(), named.Load())
	// Whether the generator reaches renders that succeed, fail and name
	// the platform's directory is judged at rapid's default depth or more
	// (.ci/run's); a run of fewer cases may miss one by chance.
	if depth.AtLeast(100) && (rendered.Load() == 0 || compared.Load() == rendered.Load() || named.Load() == 0) {
		t.Fatalf("%d renders compared, %d named the platform's directory: the generator reaches too little", compared.Load(), named.Load())
	}
}

// ReadsOf parses nothing past the default Limits: an instance of more
// bytes than a render would read reads every catalog, at the cost of
// counting its bytes.
func TestReadsOfParsesNothingPastTheLimits(t *testing.T) {
	files := instance(fmt.Sprintf("name: \"shop\"\nrequires: %q: \"v1.0.0\"\n", webPath))
	if paths, known := kernel.ReadsOf(files).Catalogs(); !known || !slices.Equal(paths, []string{webPath}) {
		t.Fatalf("ReadsOf: %v, known %v", paths, known)
	}
	files["big.cue"] = []byte("package shop\n\n_pad: \"" + strings.Repeat("x", 1<<20) + "\"\n")
	if paths, known := kernel.ReadsOf(files).Catalogs(); known {
		t.Fatalf("ReadsOf of a file past MaxFileSize: %v, known", paths)
	}
}

// A platform's dependencies are the same after it crosses a process
// boundary as JSON, as an isolate worker's platform does: a platform
// module whose name, type and labels are plain strings stays without
// its content in the set, and one that writes a label with a default
// keeps it.
func TestDependenciesCrossTheCodec(t *testing.T) {
	k := kernel.New()
	reads := kernel.ReadsOf(instance(fmt.Sprintf("name: \"shop\"\nrequires: %q: \"v1.0.0\"\n", webPath)))
	const module = "module: \"platform.leasekit.dev/acme@v0\"\nlanguage: version: \"v0.14.0\"\n"
	body := fmt.Sprintf("package platform\n\nname: \"acme\"\ncatalogs: %q: version: \"v1.0.0\"\n", webPath)
	var deps []string
	for _, labels := range []string{`labels: team: "a"`, `labels: team: *"a" | string`} {
		dir := t.TempDir()
		kernel.WriteFiles(t, dir, map[string]string{"cue.mod/module.cue": module, "platform.cue": body + labels + "\n"})
		p, err := k.BuildPlatform(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q kernel.Platform
		if err := json.Unmarshal(data, &q); err != nil {
			t.Fatal(err)
		}
		if a, b := reads.Dependencies(p, kernel.SkewWarn), reads.Dependencies(&q, kernel.SkewWarn); a != b {
			t.Errorf("%s: dependencies %s, and %s after a JSON round trip", labels, a, b)
		}
		deps = append(deps, reads.Dependencies(p, kernel.SkewWarn))
	}
	if deps[0] == deps[1] {
		t.Errorf("a label written plainly and with a default: the same dependencies %s", deps[0])
	}
}

// A file's @if and @extern attributes add no field, and ReadsOf reads
// past them; any other declaration attribute at the top of a file, or
// one in requires, may embed a data file's fields there (@embed), and
// ReadsOf reads every catalog.
func TestReadsOfDeclarationAttributes(t *testing.T) {
	req := fmt.Sprintf("requires: %q: \"v1.0.0\"\n", webPath)
	for _, c := range []struct {
		src   string
		known bool
	}{
		{"@if(prod)\n@extern(embed)\n\npackage shop\n\n" + req, true},
		{"@extern(embed)\n\npackage shop\n\n@embed(file=\"x.json\")\n" + req, false},
		{"@extern(embed)\n\npackage shop\n\n" + req + "requires: {@embed(file=\"x.json\")}\n", false},
		{"package shop\n\n@tag()\n" + req, false},
	} {
		files := instance("name: \"shop\"")
		files["req.cue"] = []byte(c.src)
		if paths, known := kernel.ReadsOf(files).Catalogs(); known != c.known || known && !slices.Equal(paths, []string{webPath}) {
			t.Errorf("ReadsOf of\n%s: %v, known %v; want known %v", c.src, paths, known, c.known)
		}
	}
}
