package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"testing/fstest"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"leasekit.dev/platform/internal/rules"
)

// RenderInput is what Render renders.
type RenderInput struct {
	// Platform is the platform to render against, as BuildPlatform
	// returned it; Render loads its module again from Platform.Dir.
	Platform *Platform

	// Instance is the instance module to render.
	Instance Instance

	// Skew is what to do when the instance requires a newer catalog
	// version than the platform carries.
	Skew SkewPolicy
}

// An Instance is an instance module: its files, or a directory holding
// them. Exactly one of Dir and Files is set.
type Instance struct {
	// Dir is the module's directory on disk.
	Dir string

	// Files maps slash-separated paths to contents, cue.mod/module.cue
	// included. Positions in errors name them under "instance/".
	Files map[string][]byte
}

// RenderOutput is the result of a Render.
type RenderOutput struct {
	Instance    string       // the instance's name
	Resources   []Resource   // one per component, ordered by component name
	Diagnostics []Diagnostic // findings that did not fail the render, ordered by catalog path
}

// A Resource is one rendered component.
type Resource struct {
	Component string // the component's name in the instance
	Kind      string
	Name      string // metadata.name

	// Object is the whole resource: apiVersion, kind, metadata (name,
	// namespace, labels, annotations) and spec, as decoded JSON values.
	Object map[string]any
}

// Render renders in.Instance against in.Platform. It loads the instance
// module, checks the catalogs it requires against those the platform
// carries, loads the platform's module, unifies both under the kernel's
// #Render and returns the resources.
//
// A catalog the instance requires or a component uses that the platform
// lacks or has disabled, or a kind its catalog does not provide, fails the
// render with a *CatalogError for each. An instance that requires a newer
// catalog version than the platform carries renders against the
// platform's version with a diagnostic under SkewWarn, and fails before
// evaluation with a *SkewError for each skewed catalog under SkewRefuse.
// Any other problem, in either module, comes back in one *Error. Render
// retains nothing: every call evaluates in a cue.Context of its own.
func (k *Kernel) Render(ctx context.Context, in RenderInput) (RenderOutput, error) {
	if err := ctx.Err(); err != nil {
		return RenderOutput{}, err
	}
	if in.Platform == nil {
		return RenderOutput{}, errors.New("kernel: render: no platform")
	}
	cc := cuecontext.New()
	schema, err := compileSchema(cc, true)
	if err != nil {
		return RenderOutput{}, err
	}

	dir, iv, err := loadInstance(ctx, cc, in.Instance)
	if err != nil {
		if dir == "" { // misuse, not a problem in a module
			return RenderOutput{}, err
		}
		return RenderOutput{}, asError("render", dir, err)
	}
	// The catalogs first, from the instance as written: a refusal comes
	// before any evaluation against the schema or the platform.
	var out RenderOutput
	if err := checkInstanceValues(iv); err != nil {
		return RenderOutput{}, asError("render", dir, err, source{nil, iv})
	}
	if out.Diagnostics, err = checkCatalogs(iv, in.Platform, in.Skew); err != nil {
		return RenderOutput{}, asError("render", dir, err, source{nil, iv})
	}
	if err := ctx.Err(); err != nil {
		return RenderOutput{}, err
	}

	pm, err := dirModule(in.Platform.Dir)
	if err != nil {
		return RenderOutput{}, asError("render", in.Platform.Dir, err)
	}
	pv, err := loadPackage(ctx, cc, pm)
	if err != nil {
		return RenderOutput{}, asError("render", in.Platform.Dir, err)
	}
	render := schema.LookupPath(cue.ParsePath("#Render")).
		FillPath(cue.ParsePath("platform"), pv).
		FillPath(cue.ParsePath("instance"), iv)
	if err := validate(render); err != nil {
		return RenderOutput{}, asError("render", dir, err,
			source{[]string{"#Render", "instance"}, iv}, source{[]string{"#Render", "platform"}, pv})
	}
	if err := ctx.Err(); err != nil {
		return RenderOutput{}, err
	}
	if out.Instance, err = render.LookupPath(cue.ParsePath("instance.name")).String(); err != nil {
		return RenderOutput{}, asError("render", dir, err)
	}
	out.Resources, err = decodeResources(render.LookupPath(cue.ParsePath("resources")))
	if err != nil {
		return RenderOutput{}, asError("render", dir, err)
	}
	return out, nil
}

// loadInstance loads the instance module into cc and returns the directory
// its errors name.
func loadInstance(ctx context.Context, cc *cue.Context, in Instance) (string, cue.Value, error) {
	switch {
	case in.Dir != "" && in.Files != nil:
		return "", cue.Value{}, errors.New("kernel: render: the instance has both Dir and Files")
	case in.Dir != "":
		abs, err := filepath.Abs(in.Dir)
		if err != nil {
			return in.Dir, cue.Value{}, err
		}
		m, err := dirModule(abs)
		if err != nil {
			return abs, cue.Value{}, err
		}
		v, err := loadPackage(ctx, cc, m)
		return abs, v, err
	case len(in.Files) > 0:
		fsys := fstest.MapFS{}
		for name, data := range in.Files {
			if !fs.ValidPath(name) {
				return "instance", cue.Value{}, fmt.Errorf("instance file %q: not a valid slash-separated relative path", name)
			}
			fsys[name] = &fstest.MapFile{Data: data}
		}
		info, err := readModuleFile(fsys, "instance/"+moduleFile)
		if err != nil {
			return "instance", cue.Value{}, err
		}
		name := func(p string) string { return path.Join("instance", p) }
		v, err := loadPackage(ctx, cc, moduleSource{fsys: fsys, name: name, info: info})
		return "instance", v, err
	}
	return "", cue.Value{}, errors.New("kernel: render: no instance (set Dir or Files)")
}

// checkCatalogs checks the catalogs the instance iv requires and its
// components use against those the platform carries, and returns the skew
// diagnostics under SkewWarn. It reads iv as written, before any
// evaluation against the schema: a value that is not a concrete string
// here is left for the schema to report.
func checkCatalogs(iv cue.Value, p *Platform, policy SkewPolicy) ([]Diagnostic, error) {
	requires := stringFields(iv.LookupPath(cue.ParsePath("requires")))
	var shape, unusable, skews []error
	var diags []Diagnostic
	for _, path := range slices.Sorted(mapKeys(requires)) {
		want := requires[path]
		if field, rule := rules.Catalog(path, want); rule != "" {
			if field == "path" {
				rule = "catalog path " + rule
			}
			shape = append(shape, fieldError(iv, []string{"requires", path}, "%s", rule))
			continue
		}
		c, ok := p.Catalog(path)
		switch {
		case !ok:
			unusable = append(unusable, &CatalogError{Path: path, Rule: fmt.Sprintf("is not carried by platform %s", p.Name)})
		case !c.Enabled:
			unusable = append(unusable, &CatalogError{Path: path, Rule: fmt.Sprintf("is disabled on platform %s", p.Name)})
		case rules.Newer(want, c.Version):
			if policy == SkewRefuse {
				skews = append(skews, &SkewError{Path: path, InstanceVersion: want, PlatformVersion: c.Version})
				continue
			}
			diags = append(diags, Diagnostic{
				Severity:        "warning",
				Message:         fmt.Sprintf("catalog %s: the instance requires %s, newer than the platform's %s; rendered against %s", path, want, c.Version, c.Version),
				Path:            path,
				InstanceVersion: want,
				PlatformVersion: c.Version,
				Newer:           true,
			})
		}
	}
	comps := iv.LookupPath(cue.ParsePath("components"))
	for _, name := range slices.Sorted(mapKeys(structFields(comps))) {
		comp := stringFields(comps.LookupPath(cue.MakePath(cue.Str(name))))
		path, kind := comp["catalog"], comp["kind"]
		if path == "" {
			continue // left for the schema
		}
		if _, required := requires[path]; !required {
			shape = append(shape, fieldError(iv, []string{"components", name, "catalog"},
				"catalog %s is not in the instance's requires", path))
			continue
		}
		c, ok := p.Catalog(path)
		if !ok || !c.Enabled || kind == "" {
			continue // reported for requires, or left for the schema
		}
		if _, found := slices.BinarySearch(c.Kinds, kind); !found {
			unusable = append(unusable, &CatalogError{Path: path, Component: name,
				Rule: fmt.Sprintf("does not provide kind %s (it provides %v)", kind, c.Kinds)})
		}
	}
	if len(shape) > 0 {
		var err error
		for _, e := range shape {
			err = joinCUE(err, e)
		}
		return nil, err
	}
	if len(unusable) > 0 {
		return nil, errors.Join(unusable...)
	}
	if len(skews) > 0 {
		return nil, errors.Join(skews...)
	}
	return diags, nil
}

// structFields returns the regular fields of v by label, or nil when v is
// not a struct.
func structFields(v cue.Value) map[string]cue.Value {
	iter, err := v.Fields()
	if err != nil {
		return nil
	}
	m := map[string]cue.Value{}
	for iter.Next() {
		m[iter.Selector().Unquoted()] = iter.Value()
	}
	return m
}

// stringFields returns the fields of v that are concrete strings.
func stringFields(v cue.Value) map[string]string {
	m := map[string]string{}
	for label, f := range structFields(v) {
		if s, err := f.String(); err == nil {
			m[label] = s
		}
	}
	return m
}

// decodeResources decodes the rendered resources, ordered by component.
func decodeResources(v cue.Value) ([]Resource, error) {
	data, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var objs map[string]map[string]any
	if err := json.Unmarshal(data, &objs); err != nil {
		return nil, err
	}
	out := make([]Resource, 0, len(objs))
	for _, name := range slices.Sorted(mapKeys(objs)) {
		obj := objs[name]
		r := Resource{Component: name, Object: obj}
		r.Kind, _ = obj["kind"].(string)
		if md, ok := obj["metadata"].(map[string]any); ok {
			r.Name, _ = md["name"].(string)
		}
		out = append(out, r)
	}
	return out, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
