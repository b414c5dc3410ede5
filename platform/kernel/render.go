package kernel

import (
	"context"

	"cuelang.org/go/cue"
)

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
	return k.render(ctx, in, paths{})
}

// paths says which of its fast paths a render leaves out: none, in
// Render. Each has a slow twin, which tests hold it equal to and
// BenchmarkRenderPaths measures it against.
type paths struct {
	loaderReads bool // read an instance as the loader reads it, never whole (modread.ReadPlain)
	evaluated   bool // evaluate #Render, never assemble the resources in Go (assemble)
}

// render is Render, by the paths via says.
func (k *Kernel) render(ctx context.Context, in RenderInput, via paths) (RenderOutput, error) {
	limits, err := k.limits()
	if err != nil {
		return RenderOutput{}, err
	}
	r, err := prepare(ctx, limits, in, via.loaderReads)
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
	if !via.evaluated {
		if out, ok, err := assemble(ctx, in.Platform, r); ok || err != nil {
			return out, err
		}
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

// evaluate does all of Render but decode the resources, evaluating
// #Render in CUE.
func evaluate(ctx context.Context, limits Limits, in RenderInput) (*evaluation, error) {
	r, err := prepare(ctx, limits, in, false)
	if err != nil {
		return nil, err
	}
	return evaluateRender(ctx, in, r)
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
