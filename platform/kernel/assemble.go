package kernel

import (
	"context"
	"maps"
	"slices"

	"cuelang.org/go/cue"
)

// The fixed parts of a rendered resource. They mirror #Render in
// render.cue; TestAssembleMatchesRender, and the differential test
// against the stock loader's evaluation in leasekit.dev/internal, hold the
// two together.
const (
	resourceAPIVersion = "leasekit.dev/v1alpha1"
	instanceLabel      = "app.kubernetes.io/instance"
	managedByLabel     = "app.kubernetes.io/managed-by"
	managedBy          = "leasekit"
	platformNameLabel  = "platform.leasekit.dev/name"
	platformTypeLabel  = "platform.leasekit.dev/type"
	catalogAnnotation  = "platform.leasekit.dev/catalog"
	versionAnnotation  = "platform.leasekit.dev/catalog-version"
	defaultReplicas    = 1
)

// assemble renders r in Go, as #Render would, from CUE's evaluation of
// the instance unified with #Instance alone (every value as CUE decodes
// it, defaults and disjunctions resolved by CUE) and the platform as
// BuildPlatform decoded it: the platform's module is not evaluated again,
// nor is #Render. It adds nothing #Render does not state: the constants
// above and the replicas of 1 are #Render's, and a label set twice with
// different values goes to #Render.
//
// It does so only where the result is certainly #Render's: the platform
// was built by BuildPlatform from the content r loaded, the instance is
// valid and concrete under #Instance, no label is set twice with
// different values and no spec sets replicas. Otherwise it returns false,
// and the render evaluates #Render, whose errors name the files and
// positions of both modules. A render that fails, fails there.
func assemble(ctx context.Context, p *Platform, r *preparedRender) (RenderOutput, bool, error) {
	if !p.builtFrom(r.platform.digest) {
		return RenderOutput{}, false, nil
	}
	b := p.built
	u := r.ev
	// Definitions of the instance are left unvalidated, as #Render leaves
	// them: it validates its own, and none of the instance's.
	if u.Validate(cue.Concrete(true), cue.Final()) != nil {
		return RenderOutput{}, false, nil
	}
	if err := ctx.Err(); err != nil {
		return RenderOutput{}, false, err
	}
	name, err := lookup(u, "name").String()
	if err != nil {
		return RenderOutput{}, false, nil
	}
	namespace, nsErr := lookup(u, "namespace").String() // absent: an error

	common := make(map[string]any, len(b.labels)+4)
	ok := putLabels(common, b.labels) &&
		putLabelValues(common, lookup(u, "labels")) &&
		putLabel(common, instanceLabel, name) &&
		putLabel(common, managedByLabel, managedBy) &&
		putLabel(common, platformNameLabel, b.name) &&
		putLabel(common, platformTypeLabel, b.typ)
	if !ok {
		return RenderOutput{}, false, nil
	}

	out := RenderOutput{Instance: name, Diagnostics: r.diagnostics,
		Resources: make([]Resource, 0, len(r.written.components))}
	for _, wc := range r.written.components {
		if slices.Contains(wc.spec, replicasField) {
			return RenderOutput{}, false, nil // left for #Render to unify
		}
		c := lookup(u, "components", wc.name)
		kind, err := lookup(c, "kind").String()
		if err != nil {
			return RenderOutput{}, false, nil
		}
		catalog, err := lookup(c, "catalog").String()
		if err != nil {
			return RenderOutput{}, false, nil
		}
		version, found := b.versions[catalog]
		if !found {
			return RenderOutput{}, false, nil
		}
		labels := maps.Clone(common)
		if !putLabelValues(labels, lookup(c, "labels")) || !putLabel(labels, nameLabel, wc.name) {
			return RenderOutput{}, false, nil
		}
		spec := make(map[string]any, len(wc.spec)+1)
		specValue := lookup(c, "spec")
		for _, key := range wc.spec {
			if spec[key], err = decodeValue(lookup(specValue, key), nil, nil); err != nil {
				return RenderOutput{}, false, nil
			}
		}
		// #Render's [if c.replicas != _|_ {c.replicas}, 1][0]: the field
		// when the instance sets it, whatever makes it concrete (a
		// default included, which CUE resolves as it decodes it), else 1.
		spec[replicasField] = float64(defaultReplicas)
		if rv := lookup(c, replicasField); rv.Exists() {
			if spec[replicasField], err = decodeValue(rv, nil, nil); err != nil {
				return RenderOutput{}, false, nil
			}
		}
		metadata := map[string]any{
			"name":   name + "-" + wc.name,
			"labels": labels,
			"annotations": map[string]any{
				catalogAnnotation: catalog,
				versionAnnotation: version,
			},
		}
		if nsErr == nil {
			metadata["namespace"] = namespace
		}
		out.Resources = append(out.Resources, Resource{
			Component: wc.name,
			Kind:      kind,
			Name:      name + "-" + wc.name,
			Object: map[string]any{
				"apiVersion": resourceAPIVersion,
				"kind":       kind,
				"metadata":   metadata,
				"spec":       spec,
			},
		})
	}
	if err := ctx.Err(); err != nil {
		return RenderOutput{}, false, err
	}
	return out, true, nil
}

// putLabel sets the label key to value in labels, and reports false if
// labels holds another value for it: a conflict #Render reports.
func putLabel(labels map[string]any, key, value string) bool {
	if old, set := labels[key]; set && old != value {
		return false
	}
	labels[key] = value
	return true
}

// putLabels sets every label of from in labels, as putLabel does.
func putLabels(labels map[string]any, from map[string]string) bool {
	for k, v := range from {
		if !putLabel(labels, k, v) {
			return false
		}
	}
	return true
}

// putLabelValues sets every label of the struct v, each a concrete
// string, in labels, as putLabel does; it reports false for a value that
// is not a concrete string.
func putLabelValues(labels map[string]any, v cue.Value) bool {
	for k, f := range structFields(v) {
		s, err := f.String()
		if err != nil || !putLabel(labels, k, s) {
			return false
		}
	}
	return true
}
