package kernel

import (
	"context"
	"errors"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
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

// prepare loads the instance and the platform's module, checks the
// instance's values and catalogs and the platform's content, and compiles
// the vocabulary. An instance not given as a snapshot is read as the
// loader reads it when loaderReads is set, else plainly where it can be.
func prepare(ctx context.Context, limits Limits, in RenderInput, loaderReads bool) (*preparedRender, error) {
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
	snapshot, err := snapshotOf(ctx, limits, in, loaderReads)
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
	r.written = readInstance(r.cc, iv, r.ev)
	if n := len(r.written.components); n > limits.MaxComponents {
		return nil, &LimitError{Limit: "MaxComponents", Dir: dir, Value: int64(n), Max: int64(limits.MaxComponents)}
	}
	problems := checkInstanceValues(r.written)
	diagnostics, err := checkCatalogs(r.written, in.Platform, in.Skew, dir)
	switch _, plain := plainOf(err); {
	case err != nil && (problems != nil || !plain):
		problems = joinCUE(problems, catalogProblems(r.written, err)) // the instance's own, not the platform's
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
