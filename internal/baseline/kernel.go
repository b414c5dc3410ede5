package baseline

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"golang.org/x/mod/semver"
)

// The kernel's vocabulary, copied from the CUE files of
// leasekit.dev/platform/kernel (whose embedded copies are unexported):
// TestKernelSchemaIsTheKernels holds the copies equal to the originals.
var (
	//go:embed kernel_schema.cue
	kernelSchema string
	//go:embed kernel_render.cue
	kernelRender string
)

// NaiveKernel is the CUE kernel written the documented way: each call
// loads its modules with the stock loader (cue/load, no registry), builds
// them with cuecontext.New, unifies them with the kernel's #Platform or
// #Render, validates concretely and exports JSON, which encoding/json
// decodes. It does what leasekit.dev/platform/kernel does and checks no
// value rule the schema leaves to Go; a Kernel's results for a valid
// module are the same.
//
// A NaiveKernel holds no state: it is safe for concurrent use.
type NaiveKernel struct{}

// NaivePlatform is what NaiveKernel.BuildPlatform decoded.
type NaivePlatform struct {
	Dir      string
	Name     string
	Type     string
	Labels   map[string]string
	Catalogs map[string]NaiveCatalog // by path
}

// NaiveCatalog is one catalog of a NaivePlatform.
type NaiveCatalog struct {
	Version string   `json:"version"`
	Enabled *bool    `json:"enabled"` // nil: true
	Kinds   []string `json:"kinds"`   // empty: any kind
}

// NaiveResource is one rendered component.
type NaiveResource struct {
	Component string
	Kind      string
	Name      string
	Object    map[string]any
}

// NaiveSkew is a catalog the instance requires in a newer version than
// the platform carries: the render used the platform's.
type NaiveSkew struct {
	Path, InstanceVersion, PlatformVersion string
}

// loadModule loads and builds the package in the module directory dir into cc.
func loadModule(cc *cue.Context, dir string) (cue.Value, error) {
	insts := load.Instances([]string{"."}, &load.Config{Dir: dir, Env: []string{"CUE_REGISTRY=none"}})
	if err := insts[0].Err; err != nil {
		return cue.Value{}, err
	}
	v := cc.BuildInstance(insts[0])
	return v, v.Err()
}

// vocabulary compiles the kernel's CUE files into cc.
func vocabulary(cc *cue.Context) (cue.Value, error) {
	bi := build.NewContext().NewInstance("", nil)
	for name, src := range map[string]string{"schema.cue": kernelSchema, "render.cue": kernelRender} {
		f, err := parser.ParseFile(name, src)
		if err == nil {
			err = bi.AddSyntax(f)
		}
		if err != nil {
			return cue.Value{}, err
		}
	}
	v := cc.BuildInstance(bi)
	return v, v.Err()
}

// BuildPlatform loads the platform module at dir, unifies it with
// #Platform, validates it concretely, definitions included, and decodes it.
func (NaiveKernel) BuildPlatform(ctx context.Context, dir string) (*NaivePlatform, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cc := cuecontext.New()
	v, err := loadModule(cc, dir)
	if err != nil {
		return nil, err
	}
	schema, err := vocabulary(cc)
	if err != nil {
		return nil, err
	}
	u := schema.LookupPath(cue.ParsePath("#Platform")).Unify(v)
	if err := u.Validate(cue.Concrete(true)); err != nil {
		return nil, err
	}
	// The kernel validates a platform's definitions concretely too.
	iter, err := u.Fields(cue.Definitions(true))
	if err != nil {
		return nil, err
	}
	for iter.Next() {
		if iter.Selector().IsDefinition() {
			if err := iter.Value().Validate(cue.Concrete(true)); err != nil {
				return nil, err
			}
		}
	}
	var d struct {
		Name     string                  `json:"name"`
		Type     string                  `json:"type"`
		Labels   map[string]string       `json:"labels"`
		Catalogs map[string]NaiveCatalog `json:"catalogs"`
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	if d.Type == "" {
		d.Type = "standard"
	}
	return &NaivePlatform{Dir: dir, Name: d.Name, Type: d.Type, Labels: d.Labels, Catalogs: d.Catalogs}, nil
}

// Render loads the platform's module again and the instance module at
// instanceDir, checks the catalogs the instance requires and its
// components use against those the platform carries, unifies both under
// #Render, validates concretely and decodes the resources, ordered by
// component name. A catalog required in a newer version than the platform
// carries is reported as a skew, and rendered against the platform's.
func (NaiveKernel) Render(ctx context.Context, p *NaivePlatform, instanceDir string) ([]NaiveResource, []NaiveSkew, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	cc := cuecontext.New()
	pv, err := loadModule(cc, p.Dir)
	if err != nil {
		return nil, nil, err
	}
	iv, err := loadModule(cc, instanceDir)
	if err != nil {
		return nil, nil, err
	}
	// The catalogs an instance requires and uses are what CUE evaluates
	// them to under #Instance: a default or a disjunction the schema
	// narrows included.
	schema, err := vocabulary(cc)
	if err != nil {
		return nil, nil, err
	}
	var written struct {
		Requires   map[string]string `json:"requires"`
		Components map[string]struct {
			Kind    string `json:"kind"`
			Catalog string `json:"catalog"`
		} `json:"components"`
	}
	if err := schema.LookupPath(cue.ParsePath("#Instance")).Unify(iv).Decode(&written); err != nil {
		return nil, nil, err
	}
	var skews []NaiveSkew
	for _, path := range slices.Sorted(maps.Keys(written.Requires)) {
		want := written.Requires[path]
		c, ok := p.Catalogs[path]
		if !ok || (c.Enabled != nil && !*c.Enabled) {
			return nil, nil, fmt.Errorf("catalog %s is not usable on platform %s", path, p.Name)
		}
		if semver.Compare(withV(want), withV(c.Version)) > 0 {
			skews = append(skews, NaiveSkew{path, want, c.Version})
		}
	}
	for name, comp := range written.Components {
		if _, ok := written.Requires[comp.Catalog]; !ok {
			return nil, nil, fmt.Errorf("component %s: catalog %s is not required", name, comp.Catalog)
		}
		if kinds := p.Catalogs[comp.Catalog].Kinds; len(kinds) > 0 && !slices.Contains(kinds, comp.Kind) {
			return nil, nil, fmt.Errorf("component %s: catalog %s does not provide kind %s", name, comp.Catalog, comp.Kind)
		}
	}

	r := schema.LookupPath(cue.ParsePath("#Render")).
		FillPath(cue.ParsePath("platform"), pv).
		FillPath(cue.ParsePath("instance"), iv)
	if err := r.Validate(cue.Concrete(true)); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	data, err := r.LookupPath(cue.ParsePath("resources")).MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	var objects map[string]map[string]any
	if err := json.Unmarshal(data, &objects); err != nil {
		return nil, nil, err
	}
	out := make([]NaiveResource, 0, len(objects))
	for _, name := range slices.Sorted(maps.Keys(objects)) {
		obj := objects[name]
		r := NaiveResource{Component: name, Object: obj}
		r.Kind, _ = obj["kind"].(string)
		if md, ok := obj["metadata"].(map[string]any); ok {
			r.Name, _ = md["name"].(string)
		}
		out = append(out, r)
	}
	return out, skews, nil
}

// withV spells a semantic version with a leading 'v', as
// golang.org/x/mod/semver wants it.
func withV(s string) string {
	if strings.HasPrefix(s, "v") {
		return s
	}
	return "v" + s
}
