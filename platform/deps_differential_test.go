package platform_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/internal/testkit/depth"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

var depsMinSteps = flag.Int("deps.minsteps", 0, "TestMemoDependenciesDifferential: fail unless the run takes at least this many steps")

// A countingEvaluator is an Evaluator that counts the renders it
// evaluates.
type countingEvaluator struct {
	platform.Evaluator
	renders atomic.Int64
}

func (c *countingEvaluator) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	c.renders.Add(1)
	return c.Evaluator.Render(ctx, in)
}

// depsCatalog is a catalog of the model platform.
type depsCatalog struct {
	version  string
	disabled bool
	kinds    []string
}

// depsPlatform is the model of a platform: what the differential test
// publishes.
type depsPlatform struct {
	name, typ string
	labels    map[string]string
	skew      kernel.SkewPolicy
	catalogs  map[string]depsCatalog
	unread    int // a change to the module that no render reads
}

func (p depsPlatform) files(t *rapid.T) platformmodule.Files {
	in := platformmodule.Input{Name: p.name, Type: p.typ, Labels: p.labels}
	for _, path := range slices.Sorted(maps.Keys(p.catalogs)) {
		c := p.catalogs[path]
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{Path: path, Version: c.version, Kinds: c.kinds, Disabled: c.disabled})
	}
	files, err := platformmodule.Generate(in)
	if err != nil {
		t.Fatalf("generating %+v: %v", p, err)
	}
	if p.unread > 0 {
		files["unread.cue"] = fmt.Appendf(nil, "package platform\n\n_unread: %d\n", p.unread)
	}
	return files
}

// depsInstance is an instance of the differential test.
type depsInstance struct {
	requires   map[string]string // catalog path to the version required
	components map[string][2]string
	labels     map[string]string
	opaque     bool // requires is written inside an embedding, which no parse sees through
}

func (in depsInstance) files() map[string][]byte {
	var req strings.Builder
	for _, path := range slices.Sorted(maps.Keys(in.requires)) {
		fmt.Fprintf(&req, "%q: %q, ", path, in.requires[path])
	}
	src := "package shop\n\nname: \"shop\"\n"
	if in.opaque {
		src += fmt.Sprintf("{requires: {%s}}\n", req.String())
	} else {
		src += fmt.Sprintf("requires: {%s}\n", req.String())
	}
	for _, name := range slices.Sorted(maps.Keys(in.components)) {
		c := in.components[name]
		src += fmt.Sprintf("components: %s: {kind: %q, catalog: %q}\n", name, c[0], c[1])
	}
	for _, k := range slices.Sorted(maps.Keys(in.labels)) {
		src += fmt.Sprintf("labels: %q: %q\n", k, in.labels[k])
	}
	return map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue":           []byte(src),
	}
}

// dependencies is the test's own statement of what a render of in reads
// of p, from the words: the platform's name, type and labels, the
// skew policy, and of each catalog the instance requires (every catalog,
// for an instance whose requires no parse can see) whether the platform
// carries it, its version, whether it is disabled, its kinds.
func (in depsInstance) dependencies(p depsPlatform) string {
	typ := p.typ
	if typ == "" {
		typ = "standard"
	}
	paths := slices.Sorted(maps.Keys(in.requires))
	if in.opaque {
		paths = slices.Sorted(maps.Keys(p.catalogs))
	}
	var cats []string
	for _, path := range paths {
		c, ok := p.catalogs[path]
		cats = append(cats, fmt.Sprintf("%s=%v/%s/%v/%v", path, ok, c.version, c.disabled, c.kinds))
	}
	labels, _ := json.Marshal(p.labels)
	return fmt.Sprintf("name=%s type=%s labels=%s skew=%s every=%v catalogs=%v", p.name, typ, labels, p.skew, in.opaque, cats)
}

var (
	depsPaths = []string{"example.com/catalogs/web@v1", "example.com/catalogs/db@v1", "example.com/catalogs/mq@v1", "example.com/catalogs/cache@v1"}
	depsKinds = []string{"Deployment", "Service", "Job"}
)

// A depsEntry is what the model knows of one key's memo entry: whether it
// is held, and the directory its result names, if it names one.
type depsEntry struct {
	bound publish.Identity[int64]
	dir   string
}

// The Publisher's render memo against a fresh kernel render, over random
// sequences of platform changes (catalogs bumped, added, removed, disabled
// and their kinds changed; name, type, labels and skew policy changed; an
// unread file changed; the same content republished) interleaved with
// renders of random instances: every render's result is a fresh render's
// against the current generation, resources, diagnostics and errors, and a
// render evaluates exactly when what it reads of the platform is one no
// render of that instance has read (or read against another directory,
// for a result that names the platform's). CI runs it at depth
// (-deps.minsteps).
func TestMemoDependenciesDifferential(t *testing.T) {
	var steps, hits, evals, bounds atomic.Int64
	base := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		root, err := os.MkdirTemp(base, "check")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		eval := &countingEvaluator{Evaluator: kernel.New()}
		model := map[string]depsEntry{} // by instance and dependencies
		p := platform.NewPublisher(filepath.Join(root, "platform"), platform.PublisherOptions{
			Evaluator: eval, NoSync: true, MemoBudget: 64 << 20,
			OnReclaim: func(ev platform.ReclaimEvent) {
				for k, e := range model {
					if e.bound == ev.Identity {
						delete(model, k)
					}
				}
			},
		})
		if err := p.Boot(); err != nil {
			t.Fatal(err)
		}
		fresh := kernel.New()
		plat := depsPlatform{name: "acme", labels: map[string]string{"team": "a"}, catalogs: map[string]depsCatalog{
			depsPaths[0]: {version: "v1.1.0"}, depsPaths[1]: {version: "v1.1.0", kinds: []string{"Deployment"}},
		}}
		gen := int64(0)
		publish := func(t *rapid.T, newGen bool) {
			if gen == 0 || newGen {
				gen++
			}
			if _, err := p.Publish(ctx, gen, plat.files(t), plat.skew); err != nil {
				t.Fatalf("Publish(%d, %+v): %v", gen, plat, err)
			}
		}
		publish(t, true)
		change := func(f func(t *rapid.T)) func(*rapid.T) {
			return func(t *rapid.T) {
				f(t)
				publish(t, rapid.IntRange(0, 4).Draw(t, "sameGeneration") != 0)
			}
		}
		version := rapid.SampledFrom([]string{"v1.0.0", "v1.1.0", "v1.2.0", "1.2.0"})
		path := rapid.SampledFrom(depsPaths)
		instances := rapid.Custom(func(t *rapid.T) depsInstance {
			in := depsInstance{requires: map[string]string{}, components: map[string][2]string{}, labels: map[string]string{}}
			for _, path := range rapid.SliceOfNDistinct(rapid.SampledFrom(depsPaths), 1, 3, rapid.ID).Draw(t, "requires") {
				in.requires[path] = version.Draw(t, "want")
			}
			required := slices.Sorted(maps.Keys(in.requires))
			for i := range rapid.IntRange(0, 2).Draw(t, "components") {
				in.components[fmt.Sprintf("c%d", i)] = [2]string{rapid.SampledFrom(depsKinds).Draw(t, "kind"), rapid.SampledFrom(required).Draw(t, "catalog")}
			}
			if rapid.Bool().Draw(t, "labelled") {
				in.labels["team"] = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "team")
			}
			in.opaque = rapid.IntRange(0, 5).Draw(t, "opaque") == 0
			return in
		})
		pool := rapid.SliceOfN(instances, 1, 4).Draw(t, "instances")
		dirs := make([]string, len(pool)) // each instance also as a Dir
		for i, in := range pool {
			dirs[i] = filepath.Join(root, fmt.Sprintf("instance-%d", i))
			writeInstance(t, dirs[i], in.files())
		}

		render := func(t *rapid.T) {
			i := rapid.IntRange(0, len(pool)-1).Draw(t, "instance")
			in, form := kernel.Instance{Files: pool[i].files()}, "files"
			if rapid.Bool().Draw(t, "dir") {
				in, form = kernel.Instance{Dir: dirs[i]}, "dir"
			}
			before, beforeHits := eval.renders.Load(), p.Stats().Memo.Hits
			rec, release, ok := p.Store().Lease()
			if !ok {
				t.Fatal("nothing held after a publish")
			}
			defer release()
			out, key, err := p.RenderLeased(ctx, rec, in)
			evaluated := eval.renders.Load() - before
			hits.Add(int64(p.Stats().Memo.Hits - beforeHits))
			evals.Add(evaluated)

			want, werr := fresh.Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: in, Skew: rec.Skew})
			if !sameError(err, werr) {
				t.Fatalf("render of instance %d as %s against %v: error %v, a fresh render's %v", i, form, rec.Identity, err, werr)
			}
			if a, b := mustJSON(t, out), mustJSON(t, want); a != b || !reflect.DeepEqual(out, want) {
				t.Fatalf("render of instance %d against %v:\n%s\nfresh:\n%s", i, rec.Identity, a, b)
			}

			// The memo knows an instance by its content (and a Dir by its
			// name too), not by its place in the pool, which may hold two
			// instances of one content.
			who := kernel.Digest(pool[i].files())
			if form == "dir" {
				who = dirs[i] + " " + who
			}
			mk := fmt.Sprintf("%s %s %s", form, who, pool[i].dependencies(plat))
			e, held := model[mk]
			wantEval := !held || e.dir != "" && (e.bound != rec.Identity || e.dir != rec.Dir)
			if wantEval != (evaluated == 1) || evaluated > 1 {
				t.Fatalf("render of instance %d against %v evaluated %d times; the model says it should %sevaluate (%s; entry %+v held %v)",
					i, rec.Identity, evaluated, map[bool]string{true: "", false: "not "}[wantEval], mk, e, held)
			}
			bound := err != nil && strings.Contains(err.Error(), rec.Dir)
			switch {
			case err != nil && !kernel.IsContent(err, map[string]string{"files": "instance", "dir": dirs[i]}[form]):
				delete(model, mk) // not memoized
			case bound:
				bounds.Add(1)
				model[mk] = depsEntry{bound: rec.Identity, dir: rec.Dir}
			default:
				model[mk] = depsEntry{}
			}
			k, kerr := p.Key(ctx, rec, in)
			if kerr != nil || (k == key) == bound {
				t.Fatalf("render of instance %d: key %v, Key %v (%v); the result names the directory: %v", i, key, k, kerr, bound)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"bump": change(func(t *rapid.T) {
				path := rapid.SampledFrom(slices.Sorted(maps.Keys(plat.catalogs))).Draw(t, "path")
				c := plat.catalogs[path]
				c.version = version.Draw(t, "version")
				plat.catalogs[path] = c
			}),
			"add": change(func(t *rapid.T) {
				plat.catalogs[path.Draw(t, "path")] = depsCatalog{version: version.Draw(t, "version")}
			}),
			"remove": change(func(t *rapid.T) {
				if len(plat.catalogs) == 1 {
					t.Skip("one catalog left")
				}
				delete(plat.catalogs, rapid.SampledFrom(slices.Sorted(maps.Keys(plat.catalogs))).Draw(t, "path"))
			}),
			"disable": change(func(t *rapid.T) {
				path := rapid.SampledFrom(slices.Sorted(maps.Keys(plat.catalogs))).Draw(t, "path")
				c := plat.catalogs[path]
				c.disabled = !c.disabled
				plat.catalogs[path] = c
			}),
			"kinds": change(func(t *rapid.T) {
				path := rapid.SampledFrom(slices.Sorted(maps.Keys(plat.catalogs))).Draw(t, "path")
				c := plat.catalogs[path]
				c.kinds = slices.Sorted(slices.Values(rapid.SliceOfDistinct(rapid.SampledFrom(depsKinds[:2]), rapid.ID).Draw(t, "kinds")))
				plat.catalogs[path] = c
			}),
			"name": change(func(t *rapid.T) { plat.name = rapid.SampledFrom([]string{"acme", "zenith"}).Draw(t, "name") }),
			"type": change(func(t *rapid.T) { plat.typ = rapid.SampledFrom([]string{"", "standard", "edge"}).Draw(t, "type") }),
			"labels": change(func(t *rapid.T) {
				key := rapid.SampledFrom([]string{"team", "tier"}).Draw(t, "key")
				if v := rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "value"); v == "" {
					delete(plat.labels, key)
				} else {
					plat.labels[key] = v
				}
			}),
			"skew": change(func(t *rapid.T) {
				plat.skew = rapid.SampledFrom([]kernel.SkewPolicy{kernel.SkewWarn, kernel.SkewRefuse}).Draw(t, "skew")
			}),
			"unread":      change(func(t *rapid.T) { plat.unread = rapid.IntRange(0, 2).Draw(t, "unread") }),
			"republish":   change(func(t *rapid.T) {}),
			"render":      render,
			"renderAgain": render,
			"renderMore":  render,
			"":            func(t *rapid.T) { steps.Add(1) },
		})
	})
	t.Logf("%d steps, %d evaluations, %d memo hits, %d results that name the directory", steps.Load(), evals.Load(), hits.Load(), bounds.Load())
	// Results that name the directory are rarer: whether the generator
	// met one is judged at rapid's default depth or more (.ci/run's).
	if hits.Load() == 0 || evals.Load() == 0 || depth.AtLeast(100) && bounds.Load() == 0 {
		t.Fatalf("%d hits, %d evaluations, %d results that name the directory: the memo was not exercised", hits.Load(), evals.Load(), bounds.Load())
	}
	if n := steps.Load(); n < int64(*depsMinSteps) {
		t.Fatalf("ran %d steps, want at least %d (-deps.minsteps)", n, *depsMinSteps)
	}
}

func mustJSON(t *rapid.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
