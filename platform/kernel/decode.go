package kernel

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"cuelang.org/go/cue"
)

// The names Render decodes a rendered resource by. They mirror #Render in
// render.cue; TestDecodeMatchesExport holds the two together.
const (
	nameLabel     = "app.kubernetes.io/name" // the label #Render adds for the component
	replicasField = "replicas"               // the field #Render sets in a spec
)

// decodeResources decodes the rendered resources of render, one for each
// component of w, ordered by component name.
//
// A generic export of a CUE value (MarshalJSON, Fields) orders the fields
// of each struct it reads by how they were declared, and for a rendered
// resource that costs more than evaluating it. Render needs no order, its
// objects are maps, so it reads the two structs of a resource that cost
// the most to order by key: its labels, which are #Render's shared labels,
// the component's labels and its name label; and its spec, which is the
// component's spec and the replicas. The rest is read as a generic export
// would read it.
func decodeResources(render cue.Value, w writtenInstance) ([]Resource, error) {
	shared := slices.Sorted(mapKeys(structFields(lookup(render, "commonLabels"))))
	resources := lookup(render, "resources")
	out := make([]Resource, 0, len(w.components))
	for _, c := range w.components {
		keyed := []keyedStruct{
			{[]string{"metadata", "labels"}, union(shared, c.labels, []string{nameLabel})},
			{[]string{"spec"}, union(c.spec, []string{replicasField})},
		}
		x, err := decodeValue(lookup(resources, c.name), nil, keyed)
		if err != nil {
			return nil, err
		}
		obj, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("kernel: the resource of component %s is not a struct", c.name)
		}
		r := Resource{Component: c.name, Object: obj}
		r.Kind, _ = obj["kind"].(string)
		if md, ok := obj["metadata"].(map[string]any); ok {
			r.Name, _ = md["name"].(string)
		}
		out = append(out, r)
	}
	return out, nil
}

// A keyedStruct is a struct, at a path in a resource, that decodeValue
// reads by the given keys.
type keyedStruct struct {
	path []string
	keys []string
}

// decodeValue decodes v, a concrete value at path, as encoding/json
// decodes its JSON into an any. The structs at the paths in keyed are read
// by their keys, every one of which must be a field.
func decodeValue(v cue.Value, path []string, keyed []keyedStruct) (any, error) {
	switch v.IncompleteKind() {
	case cue.StructKind:
		m := map[string]any{}
		if i := slices.IndexFunc(keyed, func(k keyedStruct) bool { return slices.Equal(k.path, path) }); i >= 0 {
			for _, key := range keyed[i].keys {
				f := lookup(v, key)
				if !f.Exists() {
					return nil, fmt.Errorf("kernel: the rendered %s has no field %q", v.Path(), key)
				}
				x, err := decodeValue(f, nil, nil)
				if err != nil {
					return nil, err
				}
				m[key] = x
			}
			return m, nil
		}
		iter, err := v.Fields()
		if err != nil {
			return nil, err
		}
		for iter.Next() {
			key := iter.Selector().Unquoted()
			x, err := decodeValue(iter.Value(), append(slices.Clip(path), key), keyed)
			if err != nil {
				return nil, err
			}
			m[key] = x
		}
		return m, nil
	case cue.ListKind:
		iter, err := v.List()
		if err != nil {
			return nil, err
		}
		l := []any{}
		for iter.Next() {
			x, err := decodeValue(iter.Value(), nil, nil)
			if err != nil {
				return nil, err
			}
			l = append(l, x)
		}
		return l, nil
	case cue.StringKind:
		// JSON carries a valid UTF-8 string as it is.
		if s, err := v.String(); err != nil || utf8.ValidString(s) {
			return s, err
		}
	case cue.BoolKind:
		return v.Bool()
	case cue.NullKind:
		return nil, v.Null()
	}
	data, err := v.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var x any
	err = json.Unmarshal(data, &x)
	return x, err
}

// union returns the sorted union of sorted key lists.
func union(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}
