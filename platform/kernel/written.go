package kernel

import (
	"slices"

	"cuelang.org/go/cue"
)

// A writtenInstance is an instance module's value as written, before any
// evaluation against the schema, and what Render reads of it in one pass:
// the catalog checks run on it, and the decoding of the rendered
// resources takes the keys of each component's labels and spec from it.
type writtenInstance struct {
	v          cue.Value
	eval       func() cue.Value  // v evaluated under #Instance, for what v holds as no concrete string; may be nil
	requires   map[string]string // the catalog versions that are concrete strings, as written or as evaluated
	components []writtenComponent
}

// A writtenComponent is one component of an instance as written.
type writtenComponent struct {
	name    string
	catalog string   // "" unless a concrete string, as written or as evaluated: left for the schema
	kind    string   // likewise
	labels  []string // the keys of its labels, sorted
	spec    []string // the keys of its spec, sorted
}

// readInstance reads v, an instance as written. A string that v holds as
// something else (a default, or a disjunction the schema narrows) is read
// from eval's value, v evaluated under #Instance, as CUE evaluates it.
// Whatever is not as the schema wants it is read as missing, for the
// schema to report.
func readInstance(v cue.Value, eval func() cue.Value) writtenInstance {
	w := writtenInstance{v: v, eval: eval, requires: map[string]string{}}
	for label := range structFields(lookup(v, "requires")) {
		if s, ok := resolvedString(v, eval, "requires", label); ok {
			w.requires[label] = s
		}
	}
	comps := structFields(lookup(v, "components"))
	for _, name := range slices.Sorted(mapKeys(comps)) {
		c := comps[name]
		wc := writtenComponent{
			name:   name,
			labels: slices.Sorted(mapKeys(structFields(lookup(c, "labels")))),
			spec:   slices.Sorted(mapKeys(structFields(lookup(c, "spec")))),
		}
		wc.catalog, _ = resolvedString(v, eval, "components", name, "catalog")
		wc.kind, _ = resolvedString(v, eval, "components", name, "kind")
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

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
