package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

var memoMinSteps = flag.Int("memo.minsteps", 0, "TestMemoDifferential: fail unless the run takes at least this many steps")

// memoInstance is an instance module the differential test edits: its
// components and the extra files beside them.
type memoInstance struct {
	components map[string]memoComponent
	requires   string // the web catalog version it requires
	extra      map[string]string
	broken     string // "" or a flaw: "syntax", "type", "catalog"
}

type memoComponent struct {
	kind     string
	replicas int
	image    string
}

func (m memoInstance) files() map[string][]byte {
	src := fmt.Sprintf("package shop\n\nname: \"shop\"\nrequires: \"example.com/catalogs/web@v1\": %q\n", m.requires)
	for _, name := range slices.Sorted(maps.Keys(m.components)) {
		c := m.components[name]
		src += fmt.Sprintf("components: %s: {kind: %q, catalog: \"example.com/catalogs/web@v1\", replicas: %d, spec: image: %q}\n", name, c.kind, c.replicas, c.image)
	}
	switch m.broken {
	case "syntax":
		src += "components: {\n"
	case "type":
		src += "name: 42\n"
	case "catalog":
		src += "components: db: {kind: \"Database\", catalog: \"example.com/catalogs/db@v2\"}\n"
	}
	files := map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue":           []byte(src),
	}
	for name, data := range m.extra {
		files[name] = []byte(data)
	}
	return files
}

func (m memoInstance) clone() memoInstance {
	m.components = maps.Clone(m.components)
	m.extra = maps.Clone(m.extra)
	return m
}

// writeInstance makes dir hold exactly files.
func writeInstance(t *rapid.T, dir string, files map[string][]byte) {
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	dirtree.MustWrite(t, dir, files)
}

// sameError reports whether two renders' errors are the same: nil both,
// or of one type with one text and equal fields.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if reflect.TypeOf(a) != reflect.TypeOf(b) || a.Error() != b.Error() {
		return false
	}
	var ka, kb *kernel.Error
	if errors.As(a, &ka) && errors.As(b, &kb) {
		return reflect.DeepEqual(ka.Problems, kb.Problems) && ka.Dir == kb.Dir && ka.Op == kb.Op
	}
	return true
}

// scribble changes every map of out, as a careless caller might.
func scribble(out kernel.RenderOutput) {
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x)
				v[k] = "scribbled"
			}
			v["scribbled"] = true
		case []any:
			for i := range v {
				v[i] = "scribbled"
			}
		}
	}
	for i := range out.Resources {
		walk(out.Resources[i].Object)
		out.Resources[i].Name = "scribbled"
	}
	for i := range out.Diagnostics {
		out.Diagnostics[i].Message = "scribbled"
	}
}

// TestMemoDifferential: random instance edits (in memory and in a
// directory, files and subdirectories), platform re-publishes at the same
// and at new generations, skew changes, forgets and the reclaims they
// cause, with small memo budgets and limits; every render through the
// Publisher's memo equals, output and error, a fresh kernel's render of
// the same input, however the caller scribbled on earlier results. After
// every step the memo fits its budget and holds nothing of an identity
// that is no longer on disk.
func TestMemoDifferential(t *testing.T) {
	var steps, hits, misses atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		tmp := dirtree.TempDir(t)
		limits := kernel.Limits{}
		if rapid.Bool().Draw(t, "smallLimits") {
			limits.MaxComponents = 3
		}
		budget := rapid.SampledFrom([]int64{0, 2 << 10, 16 << 10}).Draw(t, "budget")
		p := platform.NewPublisher(filepath.Join(tmp, "platform"), platform.PublisherOptions{
			NoSync: true, Evaluator: &kernel.Kernel{Limits: limits}, MemoBudget: budget, AdmissionCapacity: 4 << 10,
		})
		if err := p.Boot(); err != nil {
			t.Fatal(err)
		}
		fresh := &kernel.Kernel{Limits: limits}
		ctx := context.Background()
		gen := int64(0)
		inst := memoInstance{components: map[string]memoComponent{"web": {kind: "Deployment", replicas: 1, image: "shop:1"}}, requires: "v1.0.0", extra: map[string]string{}}
		instDir := filepath.Join(tmp, "shop")
		dirInst := inst.clone()
		writeInstance(t, instDir, dirInst.files())

		edit := func(t *rapid.T, m memoInstance) memoInstance {
			m = m.clone()
			names := slices.Sorted(maps.Keys(m.components))
			switch rapid.IntRange(0, 7).Draw(t, "edit") {
			case 0:
				name := rapid.SampledFrom([]string{"web", "api", "cache", "jobs"}).Draw(t, "component")
				m.components[name] = memoComponent{
					kind:     rapid.SampledFrom([]string{"Deployment", "Service", "CronJob"}).Draw(t, "kind"),
					replicas: rapid.IntRange(0, 3).Draw(t, "replicas"),
					image:    fmt.Sprintf("shop:%d", rapid.IntRange(1, 3).Draw(t, "image")),
				}
			case 1:
				if len(names) > 1 {
					delete(m.components, rapid.SampledFrom(names).Draw(t, "remove"))
				}
			case 2:
				m.requires = rapid.SampledFrom([]string{"v1.0.0", "v1.1.0", "v1.9.0"}).Draw(t, "requires")
			case 3:
				m.broken = rapid.SampledFrom([]string{"", "syntax", "type", "catalog"}).Draw(t, "broken")
			case 4: // a file beside the package, which the loader reads or not
				name := rapid.SampledFrom([]string{"README.md", "values.json", "extra.cue", "sub/other.cue", "sub/deeper/x.cue", "_skip.cue"}).Draw(t, "extraName")
				m.extra[name] = rapid.SampledFrom([]string{"package shop\n\nlabels: tier: \"web\"\n", "{\"a\": 1}\n", "# notes\n", "package other\n\nx: 1\n"}).Draw(t, "extraData")
			case 5:
				if len(m.extra) > 0 {
					delete(m.extra, rapid.SampledFrom(slices.Sorted(maps.Keys(m.extra))).Draw(t, "dropExtra"))
				}
			default:
				name := rapid.SampledFrom(names).Draw(t, "component")
				c := m.components[name]
				c.replicas = rapid.IntRange(0, 3).Draw(t, "replicas")
				m.components[name] = c
			}
			return m
		}

		render := func(t *rapid.T, in kernel.Instance, what string) {
			before := p.Stats().Memo
			var out kernel.RenderOutput
			var rec platform.Generated
			var key platform.RenderKey // zero through Render
			var err error
			if rapid.Bool().Draw(t, "leased") {
				var release func()
				var ok bool
				if rec, release, ok = p.Store().Lease(); !ok {
					err = platform.ErrNotReady
				} else {
					out, key, err = p.RenderLeased(ctx, rec, in)
					release()
				}
			} else {
				out, rec, err = p.Render(ctx, in)
			}
			after := p.Stats().Memo
			hits.Add(int64(after.Hits - before.Hits))
			misses.Add(int64(after.Misses - before.Misses))
			if errors.Is(err, platform.ErrNotReady) {
				if p.Store().Generation() != 0 {
					t.Fatalf("render of %s: ErrNotReady with generation %d held", what, p.Store().Generation())
				}
				return
			}
			want, werr := fresh.Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: in, Skew: rec.Skew})
			if !sameError(err, werr) {
				t.Fatalf("render of %s (key %v): error %v (%T), a fresh render's %v (%T)", what, key, err, err, werr, werr)
			}
			if !reflect.DeepEqual(out, want) {
				t.Fatalf("render of %s (key %v):\n%+v\nfresh:\n%+v", what, key, out, want)
			}
			a, _ := json.Marshal(out)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				t.Fatalf("render of %s: JSON %s, fresh %s", what, a, b)
			}
			if err == nil && key != (platform.RenderKey{}) {
				if k, kerr := p.Key(ctx, rec, in); kerr != nil || k != key {
					t.Fatalf("render of %s: key %v, Key says %v (%v)", what, key, k, kerr)
				}
			}
			scribble(out)
		}

		steps.Add(-1) // the check before the first step
		t.Repeat(map[string]func(*rapid.T){
			"publish": func(t *rapid.T) {
				if gen == 0 || rapid.Bool().Draw(t, "newGeneration") {
					gen++
				}
				files := moduletest.Variant(rapid.IntRange(0, 3).Draw(t, "variant"))
				skew := rapid.SampledFrom([]kernel.SkewPolicy{kernel.SkewWarn, kernel.SkewRefuse}).Draw(t, "skew")
				if _, err := p.Publish(ctx, gen, files, skew); err != nil {
					t.Fatalf("Publish(%d): %v", gen, err)
				}
			},
			"republish": func(t *rapid.T) { // the current files again, maybe with another skew policy
				rec, ok := p.Store().Generated()
				if !ok {
					t.Skip("nothing held")
				}
				files := readTree(t, rec.Dir)
				skew := rapid.SampledFrom([]kernel.SkewPolicy{kernel.SkewWarn, kernel.SkewRefuse}).Draw(t, "skew")
				if _, err := p.Publish(ctx, gen, files, skew); err != nil {
					t.Fatalf("Publish(%d) again: %v", gen, err)
				}
			},
			"forget": func(t *rapid.T) {
				if rapid.IntRange(0, 4).Draw(t, "rarely") != 0 {
					t.Skip("forget rarely")
				}
				p.Forget()
			},
			"editFiles": func(t *rapid.T) { inst = edit(t, inst) },
			"editDir": func(t *rapid.T) {
				dirInst = edit(t, dirInst)
				writeInstance(t, instDir, dirInst.files())
			},
			"renderFiles": func(t *rapid.T) {
				render(t, kernel.Instance{Files: inst.files()}, "Files")
			},
			"renderDir": func(t *rapid.T) {
				render(t, kernel.Instance{Dir: instDir}, "Dir")
			},
			"": func(t *rapid.T) { // after every step
				steps.Add(1)
				st := p.Stats()
				if st.Memo.Bytes > st.Memo.Budget || (budget == 0 && st.Memo.Budget != platform.DefaultMemoBudget) {
					t.Fatalf("memo accounts %d bytes, budget %d", st.Memo.Bytes, st.Memo.Budget)
				}
				for _, id := range p.MemoIdentities() {
					if !slices.ContainsFunc(st.Dirs, func(d publish.DirStats[int64]) bool { return d.Identity == id }) {
						t.Fatalf("the memo holds entries of %v, which is on disk no more (%+v)", id, st.Dirs)
					}
				}
				if n, m := p.MemoFlights(), p.MemoPending(); n != 0 || m != 0 {
					t.Fatalf("%d flights and evaluations of %d identities left with no render running", n, m)
				}
			},
		})
	})
	t.Logf("%d steps, %d memo hits, %d misses", steps.Load(), hits.Load(), misses.Load())
	if hits.Load() == 0 || misses.Load() == 0 {
		t.Fatalf("%d hits and %d misses: the memo was not exercised", hits.Load(), misses.Load())
	}
	if n := steps.Load(); n < int64(*memoMinSteps) {
		t.Fatalf("ran %d steps, want at least %d (-memo.minsteps)", n, *memoMinSteps)
	}
}
