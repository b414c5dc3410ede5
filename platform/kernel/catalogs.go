package kernel

import (
	"errors"
	"fmt"
	"slices"

	"leasekit.dev/platform/internal/rules"
)

// A SkewPolicy says what a render does when an instance requires a newer
// version of a catalog than the platform carries.
type SkewPolicy int

const (
	// SkewWarn renders against the platform's version and reports the skew
	// in the output's diagnostics. It is the zero value.
	SkewWarn SkewPolicy = iota
	// SkewRefuse fails the render, before evaluation, with a *SkewError
	// for each skewed catalog.
	SkewRefuse
)

// String returns "Warn" or "Refuse", the spelling of the Platform
// resource's spec.skewPolicy.
func (p SkewPolicy) String() string {
	switch p {
	case SkewWarn:
		return "Warn"
	case SkewRefuse:
		return "Refuse"
	}
	return fmt.Sprintf("SkewPolicy(%d)", int(p))
}

// ParseSkewPolicy returns the policy spelled s: "Warn" or "" (the default)
// for SkewWarn, "Refuse" for SkewRefuse.
func ParseSkewPolicy(s string) (SkewPolicy, error) {
	switch s {
	case "", "Warn":
		return SkewWarn, nil
	case "Refuse":
		return SkewRefuse, nil
	}
	return 0, fmt.Errorf("kernel: skew policy %q: must be Warn or Refuse", s)
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
		c, ok := p.catalog(path)
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
		c, ok := p.catalog(path)
		if !ok || !c.Enabled || kind == "" || rules.Kind(kind) != "" {
			continue // reported for requires, by a value rule, or left for the schema
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

// catalogProblems returns err, the catalogs at fault that checkCatalogs
// found in the instance w, as CUE errors at the fields of w that name
// them, so that they join the instance's other problems in one [*Error],
// each said once.
func catalogProblems(w writtenInstance, err error) error {
	var out error
	for _, e := range joined(err) {
		var ce *CatalogError
		var se *SkewError
		switch {
		case errors.As(e, &ce) && ce.Component != "":
			e = fieldError(w.v, []string{"components", ce.Component, "kind"}, "catalog %s %s", ce.Path, ce.Rule)
		case errors.As(e, &ce):
			e = fieldError(w.v, []string{"requires", ce.Path}, "%s", ce.message())
		case errors.As(e, &se):
			e = fieldError(w.v, []string{"requires", se.Path}, "%s", se.message())
		}
		out = joinCUE(out, e)
	}
	return out
}

// joined returns the errors err joins, or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
