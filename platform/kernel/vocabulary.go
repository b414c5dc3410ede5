package kernel

import (
	_ "embed"
	"fmt"
	"slices"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
)

// The kernel's vocabulary: schema.cue holds the platform's shape, which
// BuildPlatform needs; render.cue the instance's shape and the render,
// which Render needs as well. Every call compiles the source into a
// cue.Context of its own: compiling writes to the syntax tree, so not even
// a parsed tree can be shared between calls.
var (
	//go:embed schema.cue
	schemaSource []byte
	//go:embed render.cue
	renderSource []byte
)

const (
	schemaFile = "leasekit.dev/platform/kernel/schema.cue"
	renderFile = "leasekit.dev/platform/kernel/render.cue"
)

// A vocabularyPart is how much of the kernel's vocabulary a call compiles.
type vocabularyPart int

const (
	// platformVocabulary is schema.cue: the shape of a platform, which
	// BuildPlatform needs.
	platformVocabulary vocabularyPart = iota
	// instanceVocabulary adds the shape of an instance (#Instance and
	// #Component of render.cue), which a render assembled in Go needs.
	instanceVocabulary
	// renderVocabulary adds the whole of render.cue, #Render included,
	// which a render evaluated in CUE needs.
	renderVocabulary
)

// renderDefinition is the definition of render.cue that the instance
// vocabulary leaves out.
const renderDefinition = "#Render"

// instanceSource is render.cue without #Render: source text, made once and
// only read, which each call parses anew.
var instanceSource = sync.OnceValues(func() ([]byte, error) {
	f, err := parser.ParseFile(renderFile, renderSource, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	n := len(f.Decls)
	f.Decls = slices.DeleteFunc(f.Decls, func(d ast.Decl) bool {
		field, ok := d.(*ast.Field)
		if !ok {
			return false
		}
		name, _, _ := ast.LabelName(field.Label)
		return name == renderDefinition
	})
	if len(f.Decls) != n-1 {
		return nil, fmt.Errorf("%s declares %s %d times, want once", renderFile, renderDefinition, n-len(f.Decls))
	}
	return format.Node(f)
})

// vocabulary returns the given part of the kernel's vocabulary as a build
// instance. Building it writes to its syntax, so each call parses the
// source anew.
func vocabulary(part vocabularyPart) (*build.Instance, error) {
	bi := build.NewContext().NewInstance("", nil)
	files := [][2]any{{schemaFile, schemaSource}}
	switch part {
	case instanceVocabulary:
		src, err := instanceSource()
		if err != nil {
			return nil, flatten(fmt.Errorf("kernel: the embedded schema does not parse: %w", err))
		}
		files = append(files, [2]any{renderFile, src})
	case renderVocabulary:
		files = append(files, [2]any{renderFile, renderSource})
	}
	for _, f := range files {
		syntax, err := parser.ParseFile(f[0].(string), f[1])
		if err == nil {
			err = bi.AddSyntax(syntax)
		}
		if err != nil {
			return nil, flatten(fmt.Errorf("kernel: the embedded schema does not parse: %w", err))
		}
	}
	return bi, nil
}

// compileSchema builds the vocabulary bi into cc.
func compileSchema(cc *cue.Context, bi *build.Instance) (cue.Value, error) {
	schema := cc.BuildInstance(bi)
	if err := schema.Err(); err != nil {
		return cue.Value{}, flatten(fmt.Errorf("kernel: the embedded schema does not compile: %w", err))
	}
	return schema, nil
}
