package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"leasekit.dev/platform/internal/rules"
)

// RenderInput is what Render renders.
type RenderInput struct {
	// Platform is the platform to render against, as BuildPlatform
	// returned it; Render loads its module again from Platform.Dir, and
	// refuses it unless it holds the content of Platform.Digest.
	Platform *Platform

	// Instance is the instance module to render, unless Snapshot is set.
	Instance Instance

	// Snapshot, when set, is the instance to render, as ReadInstance
	// read it; Instance must then be zero. Render renders exactly its
	// bytes and reads nothing of the instance.
	Snapshot *InstanceSnapshot

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
	// included. Errors name the module "instance" and its files by their
	// paths here.
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

// Render renders in.Instance (or in.Snapshot) against in.Platform and returns the
// resources, with in.Skew deciding what a newer catalog version the
// instance requires does ([SkewPolicy]). It retains nothing, and returns
// ctx.Err() at once when ctx is done, even while a read is blocked.
//
// A failure is a [*CatalogError] or [*SkewError] for each catalog at fault
// (joined), a [*ContentError] when the platform's directory no longer holds
// what it was built from, a [*FileError] or [*LimitError] for input refused
// before it is parsed, or one [*Error] naming the files and positions of
// either module.
func (k *Kernel) Render(ctx context.Context, in RenderInput) (RenderOutput, error) {
	limits, err := k.limits()
	if err != nil {
		return RenderOutput{}, err
	}
	r, err := prepare(ctx, limits, in)
	if err != nil {
		return RenderOutput{}, err
	}
	// When the platform's directory holds the content BuildPlatform decoded
	// and the instance is valid under #Instance, with no label set twice
	// with different values and no spec that sets replicas, the resources
	// are assembled in Go from the instance and what the build decoded,
	// without evaluating the platform's module or #Render: the resources
	// are the same. Every file of the platform is still read and hashed,
	// but only its package clause and imports are parsed. Otherwise
	// #Render is evaluated, in a cue.Context of this call's own.
	if out, ok, err := assemble(ctx, in.Platform, r); ok || err != nil {
		return out, err
	}
	e, err := evaluateRender(ctx, in, r)
	if err != nil {
		return RenderOutput{}, err
	}
	out := RenderOutput{Instance: e.instance, Diagnostics: e.diagnostics}
	if out.Resources, err = decodeResources(e.render, e.written); err != nil {
		return RenderOutput{}, asError("render", e.dir, err)
	}
	return out, nil
}

// An evaluation is a render evaluated, before its resources are decoded.
type evaluation struct {
	dir         string          // the directory the instance's errors name
	written     writtenInstance // the instance as written
	render      cue.Value       // #Render, evaluated
	instance    string          // the instance's name
	diagnostics []Diagnostic
}

// A preparedRender is a render whose modules are loaded and whose
// catalogs are checked, ready to evaluate: all of Render that comes before
// the evaluation.
type preparedRender struct {
	cc          *cue.Context
	dir         string          // the directory the instance's errors name
	iv          cue.Value       // the instance as built
	written     writtenInstance // the instance as written
	diagnostics []Diagnostic
	platform    loadedModule // the platform's module, holding the content of in.Platform.Digest
	schema      cue.Value    // the instance vocabulary (#Instance), compiled into cc
	ev          cue.Value    // the instance under #Instance
	limits      Limits
}

// loadPlatform loads p's module in full, on a goroutine of its own, and
// checks that it holds the content p was built from.
func loadPlatform(ctx context.Context, limits Limits, p *Platform) (loadedModule, error) {
	m, err := loadAside(ctx, func() (loadedModule, error) { return loadDir(ctx, limits, p.Dir) })
	if cerr := ctx.Err(); cerr != nil {
		return loadedModule{}, cerr
	}
	if err := platformLoaded(p, m, err); err != nil {
		return loadedModule{}, err
	}
	return m, nil
}

// platformLoaded returns the error of a render whose platform p loaded as
// m, with err: nil if it loaded and holds the content p was built from.
func platformLoaded(p *Platform, m loadedModule, err error) error {
	if err != nil {
		// A platform that built and no longer loads has changed, unless
		// it cannot be read at all, or is refused.
		if got := m.digest; got != "" && p.Digest != "" && got != p.Digest {
			return &ContentError{Dir: p.Dir, Want: p.Digest, Got: got, Err: moduleError("render", p.Dir, err)}
		}
		return moduleError("render", p.Dir, err)
	}
	if got := m.digest; got != p.Digest {
		return &ContentError{Dir: p.Dir, Want: p.Digest, Got: got}
	}
	return nil
}

// evaluate does all of Render but decode the resources, evaluating
// #Render in CUE.
func evaluate(ctx context.Context, limits Limits, in RenderInput) (*evaluation, error) {
	r, err := prepare(ctx, limits, in)
	if err != nil {
		return nil, err
	}
	return evaluateRender(ctx, in, r)
}

// prepare loads the instance and the platform's module, checks the
// instance's values and catalogs and the platform's content, and compiles
// the vocabulary.
func prepare(ctx context.Context, limits Limits, in RenderInput) (*preparedRender, error) {
	if err := checkRenderInput(ctx, in); err != nil {
		return nil, err
	}
	// Loading needs no cue.Context: the vocabulary and the platform load
	// on goroutines of their own while the instance loads and is checked.
	// Render returns only once they have ended, unless ctx is done first.
	var ready struct {
		vocabulary    *build.Instance
		platform      loadedModule
		vocabularyErr error
		platformErr   error
	}
	// A platform BuildPlatform returned is loaded to check its content
	// only, unless that turns out to be not enough (see loadPlatform).
	mode := parseAll
	if in.Platform.built != nil {
		mode = parseHeaders
	}
	vocab := goAhead(func() { ready.vocabulary, ready.vocabularyErr = vocabulary(instanceVocabulary) })
	defer vocab.waitContext(ctx) // its error is ctx.Err(), which the call reports where it sees it
	ahead := goAhead(func() {
		ready.platform, ready.platformErr = loadDirMode(ctx, limits, in.Platform.Dir, mode)
	})
	defer ahead.waitContext(ctx)

	// An instance given as Dir or Files renders as its snapshot does: it is
	// read once, and rendered from the bytes read.
	snapshot, err := snapshotOf(ctx, limits, in)
	if err != nil {
		return nil, err
	}
	r := &preparedRender{cc: cuecontext.New(), limits: limits}
	dir := snapshot.dir
	iv, err := loadSnapshot(ctx, r.cc, limits, snapshot)
	if err != nil {
		return nil, moduleError("render", dir, err)
	}
	r.dir, r.iv = dir, iv
	if n := len(structFields(lookup(iv, "components"))); n > limits.MaxComponents {
		return nil, &LimitError{Limit: "MaxComponents", Dir: dir, Value: int64(n), Max: int64(limits.MaxComponents)}
	}
	// The instance's values and catalogs are checked as CUE evaluates
	// them under #Instance (a default, or a disjunction the schema
	// narrows, makes a value concrete only there), at their positions as
	// written; a refusal comes before the platform is evaluated.
	if err := vocab.waitContext(ctx); err != nil {
		return nil, err
	}
	if ready.vocabularyErr != nil {
		return nil, ready.vocabularyErr
	}
	if r.schema, err = compileSchema(r.cc, ready.vocabulary); err != nil {
		return nil, err
	}
	r.ev = r.schema.LookupPath(cue.MakePath(cue.Def("#Instance"))).Unify(iv)
	r.written = readInstance(iv, r.ev)
	if n := len(r.written.components); n > limits.MaxComponents {
		return nil, &LimitError{Limit: "MaxComponents", Dir: dir, Value: int64(n), Max: int64(limits.MaxComponents)}
	}
	problems := checkInstanceValues(r.written)
	diagnostics, err := checkCatalogs(r.written, in.Platform, in.Skew, dir)
	switch _, plain := plainOf(err); {
	case err != nil && (problems != nil || !plain):
		problems = joinCUE(problems, err) // the instance's own, not the platform's
	case err != nil:
		return nil, err // catalogs the platform does not offer
	}
	if problems != nil {
		// Every problem of the instance: its value rules, its catalogs'
		// shape and its schema, which the evaluation would otherwise
		// report only once the rules pass.
		problems = joinCUE(problems, r.ev.Validate(cue.Concrete(true), cue.Final()))
		return nil, asError("render", dir, problems, source{nil, iv}, source{[]string{"#Instance"}, iv})
	}
	r.diagnostics = diagnostics
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	if err := ahead.waitContext(ctx); err != nil {
		return nil, err
	}
	r.platform, err = ready.platform, ready.platformErr
	if mode == parseHeaders && (err != nil || !in.Platform.builtFrom(r.platform.digest)) {
		// The render cannot use what the build decoded: why is told by
		// the module loaded in full.
		if r.platform, err = loadPlatform(ctx, limits, in.Platform); err != nil {
			return nil, err
		}
	} else if err = platformLoaded(in.Platform, r.platform, err); err != nil {
		return nil, err
	}
	return r, nil
}

// checkRenderInput returns the error of a render of in that cannot
// start: ctx done, or no platform.
func checkRenderInput(ctx context.Context, in RenderInput) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in.Platform == nil {
		return errors.New("kernel: render: no platform")
	}
	return nil
}

// snapshotOf returns the instance of in as a snapshot: in.Snapshot, or
// in.Instance read.
func snapshotOf(ctx context.Context, limits Limits, in RenderInput) (*InstanceSnapshot, error) {
	if in.Snapshot == nil {
		return readInstanceSnapshot(ctx, limits, in.Instance)
	}
	if in.Instance.Dir != "" || in.Instance.Files != nil {
		return nil, errors.New("kernel: render: the input has both an Instance and a Snapshot")
	}
	return in.Snapshot, nil
}

// evaluateRender builds the platform's module and evaluates #Render with
// it and the instance: the render as render.cue defines it, whose errors
// name both modules' files.
func evaluateRender(ctx context.Context, in RenderInput, r *preparedRender) (*evaluation, error) {
	if r.platform.mode != parseAll {
		m, err := loadPlatform(ctx, r.limits, in.Platform)
		if err != nil {
			return nil, err
		}
		r.platform = m
	}
	pv, err := buildPackage(ctx, r.cc, r.platform.inst)
	if err != nil {
		return nil, asError("render", in.Platform.Dir, err)
	}
	bi, err := vocabulary(renderVocabulary)
	if err != nil {
		return nil, err
	}
	schema, err := compileSchema(r.cc, bi)
	if err != nil {
		return nil, err
	}
	e := &evaluation{dir: r.dir, written: r.written, diagnostics: r.diagnostics}
	// Both inputs go in at once: each unification with #Render evaluates
	// it afresh.
	inputs := r.cc.CompileString("{}").
		FillPath(cue.MakePath(cue.Str("platform")), pv).
		FillPath(cue.MakePath(cue.Str("instance")), r.iv)
	e.render = schema.LookupPath(cue.MakePath(cue.Def("#Render"))).Unify(inputs)
	if err := validate(e.render); err != nil {
		return nil, asError("render", r.dir, err,
			source{[]string{"#Render", "instance"}, r.iv}, source{[]string{"#Render", "platform"}, pv})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if e.instance, err = lookup(e.render, "instance", "name").String(); err != nil {
		return nil, asError("render", r.dir, err)
	}
	return e, nil
}

// checkCatalogs checks the catalogs the instance w requires and its
// components use against those the platform carries, and returns the skew
// diagnostics under SkewWarn. It reads iv as written, before any
// evaluation against the schema.
func checkCatalogs(w writtenInstance, p *Platform, policy SkewPolicy, dir string) ([]Diagnostic, error) {
	// at returns the position of the field at path in the instance, as a
	// *CatalogError names it.
	at := func(path ...string) string { return relativePos(dir, posString(lookup(w.v, path...).Pos())) }
	iv, requires := w.v, w.requires
	var shape, unusable, skews []error
	var diags []Diagnostic
	for _, path := range slices.Sorted(mapKeys(requires)) {
		want := requires[path]
		if field, rule := rules.Catalog(path, want); rule != "" {
			if field == "path" {
				rule = "catalog path " + rule
			} else {
				rule = fmt.Sprintf("version %q %s", want, rule)
			}
			shape = append(shape, fieldError(iv, []string{"requires", path}, "%s", rule))
			continue
		}
		c, ok := p.Catalog(path)
		switch {
		case !ok:
			unusable = append(unusable, &CatalogError{Path: path, Position: at("requires", path), Rule: fmt.Sprintf("is not carried by platform %s", p.Name)})
		case !c.Enabled:
			unusable = append(unusable, &CatalogError{Path: path, Position: at("requires", path), Rule: fmt.Sprintf("is disabled on platform %s", p.Name)})
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
	for _, comp := range w.components {
		name, path, kind := comp.name, comp.catalog, comp.kind
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
		if len(c.Kinds) == 0 {
			continue // a catalog that lists no kinds provides any kind
		}
		if _, found := slices.BinarySearch(c.Kinds, kind); !found {
			unusable = append(unusable, &CatalogError{Path: path, Component: name, Position: at("components", name, "kind"),
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
