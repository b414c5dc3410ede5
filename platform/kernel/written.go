package kernel

import (
	"slices"

	"cuelang.org/go/cue"
)

// A writtenInstance is an instance module's value as written and as it
// evaluates under #Instance, and what Render reads of it in one pass: the
// catalog checks run on it, and the decoding of the rendered resources
// takes the keys of each component's labels and spec from it. Values are
// read as evaluated (a default, or a disjunction the schema narrows, makes
// a value concrete only there); positions are the instance's as written.
type writtenInstance struct {
	cc         *cue.Context      // the values' own
	v          cue.Value         // as written
	ev         cue.Value         // under #Instance
	requires   map[string]string // the catalog versions that are concrete strings
	components []writtenComponent
}

// A writtenComponent is one component of an instance.
type writtenComponent struct {
	name    string
	catalog string   // "" unless a concrete string: left for the schema
	kind    string   // likewise
	labels  []string // the keys of its labels, sorted
	spec    []string // the keys of its spec, sorted
}

// readInstance reads the instance v as ev, v under #Instance, holds it.
// Whatever is not as the schema wants it is read as missing, for the
// schema to report.
func readInstance(cc *cue.Context, v, ev cue.Value) writtenInstance {
	// What the schema refuses as a whole is read as written, so that
	// every problem is told.
	requires := structFields(lookup(ev, "requires"))
	if requires == nil {
		requires = structFields(lookup(v, "requires"))
	}
	w := writtenInstance{cc: cc, v: v, ev: ev, requires: stringFields(cc, requires)}
	comps := structFields(lookup(ev, "components"))
	if comps == nil {
		comps = structFields(lookup(v, "components"))
	}
	for _, name := range slices.Sorted(mapKeys(comps)) {
		c := comps[name]
		wc := writtenComponent{
			name:   name,
			labels: slices.Sorted(mapKeys(structFields(lookup(c, "labels")))),
			spec:   slices.Sorted(mapKeys(structFields(lookup(c, "spec")))),
		}
		wc.catalog, _ = asString(cc, lookup(c, "catalog"))
		wc.kind, _ = asString(cc, lookup(c, "kind"))
		w.components = append(w.components, wc)
	}
	return w
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

// stringFields returns the fields that are strings, read by asString.
func stringFields(cc *cue.Context, fields map[string]cue.Value) map[string]string {
	m := map[string]string{}
	for label, f := range fields {
		if s, err := asString(cc, f); err == nil {
			m[label] = s
		}
	}
	return m
}

// asString returns v, a value of cc, as a string, narrowed to one as a
// schema field of type string narrows it: *1 | "x" as written is "x". A
// value under the schema is already narrowed; one as written may not be.
func asString(cc *cue.Context, v cue.Value) (string, error) {
	s, err := v.String()
	if err != nil {
		s, err = v.Unify(cc.CompileString("string")).String()
	}
	return s, err
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

func strSels(path []string) []cue.Selector {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		sels[i] = cue.Str(p)
	}
	return sels
}

// lookup returns the value at path in v. Where a struct on the way is a
// disjunction with a default (components: *{...} | {...}), it selects in
// the default, as a reference in CUE does.
func lookup(v cue.Value, path ...string) cue.Value {
	if f := v.LookupPath(cue.MakePath(strSels(path)...)); f.Exists() || len(path) == 0 {
		return f
	}
	for _, p := range path {
		v, _ = v.Default()
		v = v.LookupPath(cue.MakePath(cue.Str(p)))
	}
	return v
}
