package baseline_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/internal/baseline"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/kernel"
	"pgregory.net/rapid"
)

// TestKernelMatchesNaive is the differential test of the kernel's one
// semantics: over platform and instance modules drawn from CUE's value
// forms (defaults, disjunctions, bounds, optional, required and hidden
// fields, definitions, let, comprehensions, pattern constraints,
// embedding, interpolation, int, float and big numbers, unicode) and the
// cases where a render assembled in Go and #Render could differ (a label
// set twice, replicas in spec, namespace absent, type absent), the
// kernel and the naive kernel (the stock cue/load evaluation of #Render)
// both succeed with equal platforms, resources and diagnostics, compared
// as JSON, or both fail. An input that a value rule or a limit refuses
// fails in the kernel with the typed error naming the value or the limit.
// Error texts are not compared.
func TestKernelMatchesNaive(t *testing.T) {
	ctx := context.Background()
	var rendered, refused, failed int
	rapid.Check(t, func(t *rapid.T) {
		g, pm, im, pdir, idir := drawModules(t)

		k := &kernel.Kernel{}
		limit := ""
		if g.rare("limited", 10) && len(im.components) > 0 {
			k.Limits.MaxComponents = len(im.components) - 1 + btoi(len(im.components) == 1)
			if k.Limits.MaxComponents < len(im.components) {
				limit = "MaxComponents"
			}
		}

		p, kerr := k.BuildPlatform(ctx, pdir)
		np, nerr := baseline.NaiveKernel{}.BuildPlatform(ctx, pdir)
		if pm.bad != "" {
			wantRefusal(t, kerr, pm.bad, pm.source())
			refused++
			return
		}
		if (kerr == nil) != (nerr == nil) {
			t.Fatalf("BuildPlatform: kernel %v, naive %v\n%s", kerr, nerr, pm.source())
		}
		if kerr != nil {
			failed++
			return
		}
		if got, want := platformJSON(p), naivePlatformJSON(np); got != want {
			t.Fatalf("platforms differ\nkernel %s\nnaive  %s\n%s", got, want, pm.source())
		}

		out, kerr := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: idir}})
		resources, skews, nerr := baseline.NaiveKernel{}.Render(ctx, np, idir)
		both := pm.source() + "\n----\n" + im.source()
		switch {
		case limit != "":
			var le *kernel.LimitError
			if !errors.As(kerr, &le) || le.Limit != limit {
				t.Fatalf("Render past %s: %v, want a *kernel.LimitError\n%s", limit, kerr, both)
			}
			refused++
			return
		case im.bad != "":
			wantRefusal(t, kerr, im.bad, both)
			refused++
			return
		}
		if (kerr == nil) != (nerr == nil) {
			t.Fatalf("Render: kernel %v, naive %v\n%s", kerr, nerr, both)
		}
		if kerr != nil {
			failed++
			return
		}
		rendered++
		want := make([]kernel.Resource, len(resources))
		for i, r := range resources {
			want[i] = kernel.Resource{Component: r.Component, Kind: r.Kind, Name: r.Name, Object: r.Object}
		}
		if got, exp := asJSON(t, out.Resources), asJSON(t, want); got != exp {
			t.Fatalf("resources differ\nkernel %s\nnaive  %s\n%s", got, exp, both)
		}
		var diags []baseline.NaiveSkew
		for _, d := range out.Diagnostics {
			diags = append(diags, baseline.NaiveSkew{Path: d.Path, InstanceVersion: d.InstanceVersion, PlatformVersion: d.PlatformVersion})
		}
		if got, exp := asJSON(t, diags), asJSON(t, skews); got != exp {
			t.Fatalf("diagnostics differ\nkernel %s\nnaive  %s\n%s", got, exp, both)
		}
		if out.Instance != im.name {
			t.Fatalf("instance %q, want %q\n%s", out.Instance, im.name, both)
		}
	})
	t.Logf("%d rendered, %d refused by a rule or limit, %d failed in both", rendered, refused, failed)
	if rendered == 0 {
		t.Error("no drawn input rendered")
	}
}

// wantRefusal fails t unless err is a *kernel.Error with a problem naming
// the offending value bad.
func wantRefusal(t *rapid.T, err error, bad, src string) {
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		t.Fatalf("got %v, want a *kernel.Error naming %q\n%s", err, bad, src)
	}
	for _, p := range ke.Problems {
		if strings.Contains(p.Message, fmt.Sprintf("%q", bad)) && strings.Contains(p.Message, "must be") {
			return
		}
	}
	t.Fatalf("%v: no problem names %q and its rule\n%s", err, bad, src)
}

func asJSON(t *rapid.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func platformJSON(p *kernel.Platform) string {
	type cat struct {
		Version string
		Enabled bool
		Kinds   []string
	}
	cats := map[string]cat{}
	for _, c := range p.Catalogs {
		kinds := c.Kinds
		if kinds == nil {
			kinds = []string{}
		}
		cats[c.Path] = cat{c.Version, c.Enabled, kinds}
	}
	data, _ := json.Marshal(map[string]any{"name": p.Name, "type": p.Type, "labels": p.Labels, "catalogs": cats})
	return string(data)
}

func naivePlatformJSON(p *baseline.NaivePlatform) string {
	type cat struct {
		Version string
		Enabled bool
		Kinds   []string
	}
	cats := map[string]cat{}
	for path, c := range p.Catalogs {
		kinds := slices.Compact(slices.Sorted(slices.Values(c.Kinds)))
		if kinds == nil {
			kinds = []string{}
		}
		cats[path] = cat{c.Version, c.Enabled == nil || *c.Enabled, kinds}
	}
	labels := p.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	data, _ := json.Marshal(map[string]any{"name": p.Name, "type": p.Type, "labels": labels, "catalogs": cats})
	return string(data)
}

func writeModule(t *rapid.T, files map[string]string) string {
	dir := dirtree.TempDir(t)
	dirtree.MustWrite(t, dir, files)
	// Empty directories, in cue.mod and elsewhere: CUE finds no package
	// in them, and the kernel reads them as absent.
	for range rapid.IntRange(0, 2).Draw(t, "emptyDirs") {
		empty := rapid.SampledFrom([]string{"cue.mod/pkg", "cue.mod/usr", "cue.mod/gen", "cue.mod/pkg/example.com/x", "empty"}).Draw(t, "emptyDir")
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(empty)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// drawModules draws a platform module and an instance module and writes
// each with writeModule into a directory of its own, removed when t ends.
func drawModules(t *rapid.T) (g *gen, pm *platformModule, im *instanceModule, pdir, idir string) {
	g = &gen{t: t}
	pm = g.platform()
	im = g.instance()
	return g, pm, im, writeModule(t, pm.files()), writeModule(t, im.files())
}

// The catalogs a drawn platform may carry and an instance may require.
var catalogPaths = []string{"example.com/catalogs/web@v1", "example.com/catalogs/db@v0", "example.com/c/batch@v2"}

// The versions a platform carries and an instance requires of each
// catalog, of its path's major version: older, equal and newer, with and
// without a 'v', a prerelease and build metadata.
var (
	platformVersions = [][]string{
		{"v1.4.0", "1.4.0", "v1.4.0+build.7", "1.5.0-rc.1"},
		{"v0.3.0", "0.3.0"},
		{"v2.1.0", "2.1.0-rc.1"},
	}
	requiredVersions = [][]string{
		{"v1.0.0", "1.4.0", "v1.5.0", "1.4.0-rc.1", "v1.4.0+other"},
		{"v0.3.0", "0.4.0", "v0.1.0"},
		{"2.1.0", "v2.1.0-rc.2", "v2.0.0"},
	}
)

var kinds = []string{"Deployment", "Service", "CronJob"}

// A gen draws CUE source.
type gen struct{ t *rapid.T }

func (g *gen) bool(label string) bool { return rapid.Bool().Draw(g.t, label) }
func (g *gen) intn(label string, n int) int {
	return rapid.IntRange(0, n-1).Draw(g.t, label)
}

// rare reports true once in about n draws, and false for the value
// rapid shrinks to.
func (g *gen) rare(label string, n int) bool {
	return rapid.IntRange(0, n-1).Draw(g.t, label) == n/2
}

func (g *gen) pick(label string, from ...string) string {
	return rapid.SampledFrom(from).Draw(g.t, label)
}

// str writes the string s as one of CUE's forms of a string value: a
// literal, a default among alternatives, a default a bound rules out, an
// interpolation, a let, a reference to a hidden field, a type and a
// value unified, an index into a list.
func (g *gen) str(label, s string, aside *strings.Builder) string {
	lit := fmt.Sprintf("%q", s)
	switch g.intn(label, 10) {
	case 1:
		return "*" + lit + ` | "zz-other"`
	case 8:
		return "*1 | " + lit // a default the schema's type rules out
	case 9:
		return "int | " + lit // a disjunction the schema narrows
	case 2:
		return `(*"zz-other" | ` + lit + `) & !="zz-other"` // a default ruled out
	case 3:
		if r := []rune(s); len(r) > 1 {
			return fmt.Sprintf(`"%s\(%q)"`, strings.Trim(fmt.Sprintf("%q", string(r[:1])), `"`), string(r[1:]))
		}
	case 4:
		n := len(aside.String())
		fmt.Fprintf(aside, "let L%d = %s\n", n, lit)
		return fmt.Sprintf("L%d", n)
	case 5:
		n := len(aside.String())
		fmt.Fprintf(aside, "_h%d: %s\n", n, lit)
		return fmt.Sprintf("_h%d", n)
	case 6:
		return "string & " + lit
	case 7:
		return fmt.Sprintf("[%s, \"zz-other\"][0]", lit)
	}
	return lit
}

// labelKeys are the label keys drawn mostly; kernelLabels those the
// kernel sets itself, drawn rarely, mostly with the value it sets.
var (
	labelKeys = map[string][]string{
		"platformLabels":  {"team", "example.com/owner"},
		"instanceLabels":  {"tier", "app.kubernetes.io/part-of"},
		"componentLabels": {"role", "app.kubernetes.io/version"},
	}
	sharedKeys   = []string{"team", "tier", "role"}
	labelValues  = []string{"platform", "web", "gold", "", "a.b_c-d", "v1.2"}
	kernelLabels = [][2]string{
		{"app.kubernetes.io/managed-by", "leasekit"},
		{"platform.leasekit.dev/type", "standard"},
		{"platform.leasekit.dev/name", "acme"},
		{"app.kubernetes.io/instance", "shop"},
		{"app.kubernetes.io/name", "web"},
	}
)

// labels writes a label struct, returning a value a rule refuses if it
// drew one.
func (g *gen) labels(label string, aside *strings.Builder) (string, string) {
	var b strings.Builder
	b.WriteString("{")
	bad := ""
	seen := map[string]bool{}
	for range g.intn(label+"N", 4) {
		key := g.pick(label+"Key", labelKeys[label]...)
		value := g.pick(label+"Value", labelValues...)
		switch g.intn(label+"Kernel", 12) {
		case 11: // a key another level may set too
			key = g.pick(label+"Shared", sharedKeys...)
		case 0:
			kl := kernelLabels[g.intn(label+"KernelKey", len(kernelLabels))]
			key, value = kl[0], kl[1]
		case 1:
			key = kernelLabels[g.intn(label+"KernelKey", len(kernelLabels))][0]
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if g.rare(label+"Bad", 60) {
			value = "ünïcode ✓"
			bad = value
		}
		if len(seen) > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", key, g.str(label+"Form", value, aside))
	}
	b.WriteString("}")
	return b.String(), bad
}

// A platformModule is a drawn platform module.
type platformModule struct {
	body strings.Builder
	bad  string // a value a value rule refuses, if one was drawn
}

func (m *platformModule) files() map[string]string {
	return map[string]string{
		"cue.mod/module.cue": "module: \"platform.leasekit.dev/drawn@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"platform.cue":       m.source(),
	}
}

func (m *platformModule) source() string { return "package platform\n\n" + m.body.String() }

func (g *gen) platform() *platformModule {
	m := &platformModule{}
	b := &m.body
	var aside strings.Builder
	name := "acme"
	if g.rare("platformBad", 40) {
		name, m.bad = "Acme_Corp", "Acme_Corp"
	}
	fmt.Fprintf(b, "name: %s\n", g.str("platformName", name, &aside))
	switch g.intn("type", 4) {
	case 1:
		fmt.Fprintf(b, "type: %s\n", g.str("typeForm", "edge", &aside))
	case 2:
		b.WriteString("type?: \"edge\"\n") // optional: absent
	}
	labels, bad := g.labels("platformLabels", &aside)
	if bad != "" && m.bad == "" {
		m.bad = bad
	}
	fmt.Fprintf(b, "labels: %s\n", labels)
	for i, path := range catalogPaths {
		if g.rare("notCarried", 16) {
			continue
		}
		version := g.pick("version", platformVersions[i]...)
		fmt.Fprintf(b, "catalogs: %q: version: %s\n", path, g.str("versionForm", version, &aside))
		if g.rare("disabled", 16) {
			fmt.Fprintf(b, "catalogs: %q: enabled: false\n", path)
		}
		switch g.intn("enabled", 3) {
		case 1:
			fmt.Fprintf(b, "catalogs: %q: enabled: *true | bool\n", path)
		}
		switch g.intn("kinds", 5) {
		case 4:
			fmt.Fprintf(b, "catalogs: %q: kinds: *[1] | [%q]\n", path, kinds[i%3]) // a default the schema rules out
		case 1:
			fmt.Fprintf(b, "catalogs: %q: kinds: [%q, %q]\n", path, kinds[i%3], kinds[(i+1)%3])
		case 2:
			fmt.Fprintf(b, "catalogs: %q: kinds: [for k in [%q] {k}]\n", path, kinds[i%3])
		case 3:
			fmt.Fprintf(b, "catalogs: %q: kinds: []\n", path)
		}
	}
	switch g.intn("platformExtra", 5) {
	case 1:
		b.WriteString(g.pick("platformDefs", "#Tier: *\"gold\" | \"silver\"\n_hidden: int\n", "#Tier: \"gold\" | \"silver\"\n", "#Tier: {a: 1}\n_h: {b: 2}\n", "#Tier: {a: 1}\n_h: {b: 2}\n"))
	case 2:
		b.WriteString("catalogs: [string]: enabled: *true | bool\n")
	case 3:
		b.WriteString("let Team = \"platform\"\nlabels: owner: Team\n")
	}
	b.WriteString(aside.String())
	return m
}

// An instanceModule is a drawn instance module.
type instanceModule struct {
	body       strings.Builder
	name       string
	components []string
	bad        string
}

func (m *instanceModule) files() map[string]string {
	return map[string]string{
		"cue.mod/module.cue": "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"shop.cue":           m.source(),
	}
}

func (m *instanceModule) source() string { return "package shop\n\n" + m.body.String() }

// spec writes a spec struct drawn from CUE's value forms.
func (g *gen) spec(aside *strings.Builder) string {
	var b strings.Builder
	b.WriteString("{")
	seen := map[string]bool{}
	for range g.intn("specN", 5) {
		key := g.pick("specKey", "image", "port", "ratio", "big", "note", "ports", "nested", "replicas", "size", "_hidden", "opt?", "req!", "#Def", "flag", "image", "port", "note")
		if seen[key] {
			continue
		}
		if len(seen) > 0 {
			b.WriteString(", ")
		}
		seen[key] = true
		var v string
		switch key {
		case "image":
			v = g.str("image", "app:1", aside)
		case "port":
			v = g.pick("portForm", "8080", "*80 | int", ">=1 & <=1", "int & 443", "8000 + 80")
		case "ratio":
			v = g.pick("ratioForm", "1.5", "1e3", "-0.25", "*2.5 | float", "3 / 2")
		case "big":
			v = g.pick("bigForm", "123456789012345678901234567890", "-9223372036854775809", "18446744073709551616", "1e40")
		case "note":
			v = g.str("note", g.pick("noteText", "héllo ✓", "日本語", "emoji 🚀", "tab\there", `quote"d`), aside)
		case "ports":
			v = g.pick("portsForm", "[80, 443]", "[for p in [1, 2] {p * 100}]", "[...int] & [7]", "[]")
		case "nested":
			v = g.pick("nestedForm", "{a: 1, b: {c: \"d\"}}", "{_x: 1, y: _x + 1}", "*{q: 1} | {r: 2}", "{[string]: int} & {n: 3}")
		case "replicas":
			v = g.pick("specReplicas", "2", "*3 | int", "\"two\"")
		case "size":
			v = g.pick("sizeForm", "#Size", "_size", "*\"s\" | \"l\"")
		case "_hidden", "opt?", "#Def":
			v = "1"
		case "req!":
			v = g.pick("reqForm", "int", "5")
		case "flag":
			v = g.pick("flagForm", "true", "*false | bool", "null")
		}
		fmt.Fprintf(&b, "%s: %s", key, v)
	}
	b.WriteString("}")
	return b.String()
}

func (g *gen) instance() *instanceModule {
	m := &instanceModule{name: "shop"}
	b := &m.body
	var aside strings.Builder
	name := "shop"
	if g.rare("instanceBad", 40) {
		name, m.bad = "Shop!", "Shop!"
	}
	m.name = name
	fmt.Fprintf(b, "name: %s\n", g.str("instanceName", name, &aside))
	switch g.intn("namespace", 4) {
	case 1:
		fmt.Fprintf(b, "namespace: %s\n", g.str("namespaceForm", "prod", &aside))
	case 2:
		b.WriteString("namespace?: \"prod\"\n")
	}
	required := map[string]bool{}
	for i, path := range catalogPaths {
		if g.intn("requires", 4) == 0 {
			continue
		}
		required[path] = true
		version := g.pick("requiresVersion", requiredVersions[i]...)
		fmt.Fprintf(b, "requires: %q: %s\n", path, g.str("requiresForm", version, &aside))
	}
	labels, bad := g.labels("instanceLabels", &aside)
	if bad != "" && m.bad == "" {
		m.bad = bad
	}
	fmt.Fprintf(b, "labels: %s\n", labels)

	names := []string{"web", "api", "db", "worker"}
	for i := range g.intn("components", 4) {
		cname := names[i]
		m.components = append(m.components, cname)
		path := g.pick("catalog", catalogPaths...)
		if !required[path] && g.intn("requireUsed", 6) > 0 {
			required[path] = true
			fmt.Fprintf(b, "requires: %q: %q\n", path, requiredVersions[slices.Index(catalogPaths, path)][0])
		}
		var c strings.Builder
		// Mostly a kind the catalog provides, if it lists any.
		kind := kinds[(slices.Index(catalogPaths, path)+[]int{0, 0, 1, 1, 2}[g.intn("kind", 5)])%3]
		embedded := g.intn("embed", 4) == 0
		if embedded {
			fmt.Fprintf(&aside, "_base%d: {kind: %q, catalog: %q}\n", i, kind, path)
			fmt.Fprintf(&c, "_base%d\n", i)
		} else {
			fmt.Fprintf(&c, "kind: %s\ncatalog: %s\n", g.str("kindForm", kind, &aside), g.str("catalogForm", path, &aside))
		}
		switch g.intn("replicas", 12) {
		case 1:
			fmt.Fprintf(&c, "replicas: %d\n", g.intn("replicasN", 5))
		case 2:
			c.WriteString("replicas: *3 | int\n")
		case 3:
			c.WriteString("replicas: *0 | 1\n")
		case 4:
			c.WriteString("replicas?: 4\n")
		case 5:
			c.WriteString("replicas: >=2 & <=2\n")
		case 6:
			c.WriteString(g.pick("badReplicas", "replicas: -1\n", "replicas: 1.5\n", "replicas: int\n", "replicas: *-1 | 2\n"))
		case 7:
			c.WriteString("replicas: 100000000000000000000\n")
		}
		compBad := ""
		if g.bool("componentLabels") {
			labels, bad := g.labels("componentLabels", &aside)
			if bad != "" && m.bad == "" {
				m.bad, compBad = bad, bad
			}
			fmt.Fprintf(&c, "labels: %s\n", labels)
		}
		if g.bool("hasSpec") {
			fmt.Fprintf(&c, "spec: %s\n", g.spec(&aside))
		}
		form := g.intn("comprehension", 6)
		if compBad != "" && form >= 4 {
			// A component in a disjunction that the schema rules out
			// takes its value rules with it: its bad label is refused
			// only where the component is valid otherwise.
			form = 1
		}
		switch form {
		case 0:
			fmt.Fprintf(b, "for n in [%q] {\n\tcomponents: (n): {\n%s}\n}\n", cname, c.String())
		case 4: // the component as a default, its alternative one the schema rules out
			fmt.Fprintf(b, "components: %q: *{\n%s} | {kind: \"Service\", catalog: %q, notAField: 1}\n", cname, c.String(), path)
		case 5: // the components map as a default among alternatives
			fmt.Fprintf(b, "components: *{%q: {\n%s}} | {}\n", cname, c.String())
		default:
			fmt.Fprintf(b, "components: %q: {\n%s}\n", cname, c.String())
		}
	}
	switch g.intn("instanceExtra", 6) {
	case 1:
		b.WriteString("#Size: \"small\" | \"large\"\n_size: \"small\"\n")
	case 2:
		b.WriteString("#Size: \"small\"\n_size: \"large\"\n")
	case 3:
		b.WriteString("components: [string]: labels: tier: *\"web\" | string\n#Size: \"m\"\n_size: \"m\"\n")
	case 4:
		b.WriteString("components: [=~\"^w\"]: spec: pattern: true\n#Size: 1\n_size: 2\n")
	case 5:
		b.WriteString("#Size: int\n_size: 3\nlabels: [string]: string\n")
	default:
		b.WriteString("#Size: \"s\"\n_size: \"s\"\n")
	}
	b.WriteString(aside.String())
	if !reflect.DeepEqual(m.components, slices.Compact(slices.Clone(m.components))) {
		g.t.Fatal("duplicate component names")
	}
	return m
}
