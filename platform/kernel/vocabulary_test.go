package kernel

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// TestVocabularyParts: each part of the vocabulary compiles, and holds the
// definitions its callers look up: the instance vocabulary all of
// render.cue but #Render, so an instance assembled in Go is validated
// against the same #Instance as one #Render evaluates.
func TestVocabularyParts(t *testing.T) {
	for _, c := range []struct {
		part     vocabularyPart
		has, not []string
	}{
		{platformVocabulary, []string{"#Platform", "#Catalog"}, []string{"#Instance", "#Render"}},
		{instanceVocabulary, []string{"#Platform", "#Instance", "#Component"}, []string{"#Render"}},
		{renderVocabulary, []string{"#Platform", "#Instance", "#Component", "#Render"}, nil},
	} {
		bi, err := vocabulary(c.part)
		if err != nil {
			t.Fatal(err)
		}
		schema, err := compileSchema(cuecontext.New(), bi)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range c.has {
			if !schema.LookupPath(cue.MakePath(cue.Def(d))).Exists() {
				t.Errorf("vocabulary part %d lacks %s", c.part, d)
			}
		}
		for _, d := range c.not {
			if schema.LookupPath(cue.MakePath(cue.Def(d))).Exists() {
				t.Errorf("vocabulary part %d holds %s", c.part, d)
			}
		}
	}
	// The instance part's #Instance is render.cue's, field for field.
	full, _ := vocabulary(renderVocabulary)
	part, _ := vocabulary(instanceVocabulary)
	cc := cuecontext.New()
	a, _ := compileSchema(cc, full)
	b, _ := compileSchema(cc, part)
	for _, d := range []string{"#Instance", "#Component"} {
		x, y := a.LookupPath(cue.MakePath(cue.Def(d))), b.LookupPath(cue.MakePath(cue.Def(d)))
		if err := x.Subsume(y); err != nil {
			t.Errorf("%s of the instance vocabulary is not render.cue's: %v", d, err)
		}
		if err := y.Subsume(x); err != nil {
			t.Errorf("%s of render.cue is not the instance vocabulary's: %v", d, err)
		}
	}
}
