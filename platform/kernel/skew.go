package kernel

import (
	"fmt"
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

// A SkewError reports a catalog that an instance requires in a newer
// version than the platform carries, under SkewRefuse. A render with
// several skewed catalogs returns one SkewError for each, joined; find them
// with errors.As.
type SkewError struct {
	Path            string // the catalog's module path
	InstanceVersion string // the version the instance requires
	PlatformVersion string // the version the platform carries
}

// Error names the catalog and both versions.
func (e *SkewError) Error() string {
	return fmt.Sprintf("kernel: catalog %s: the instance requires %s, newer than the platform's %s (skew policy Refuse)",
		e.Path, e.InstanceVersion, e.PlatformVersion)
}

// A CatalogError reports a catalog an instance requires or a component
// uses that the platform does not offer.
type CatalogError struct {
	Path      string // the catalog's module path
	Component string // the component that uses it, or "" for the requires list
	Rule      string // what is wrong: "is not carried by the platform", ...

	// Position is where the instance requires the catalog, or where the
	// component sets its kind: file:line:column, the file relative to
	// the instance's module ("shop.cue:3:11"); "" if unknown.
	Position string
}

// Error names the position, the catalog, the component if any, and the
// rule.
func (e *CatalogError) Error() string {
	at := ""
	if e.Position != "" {
		at = e.Position + ": "
	}
	if e.Component != "" {
		return fmt.Sprintf("kernel: %scomponent %s: catalog %s %s", at, e.Component, e.Path, e.Rule)
	}
	return fmt.Sprintf("kernel: %scatalog %s %s", at, e.Path, e.Rule)
}

// A Diagnostic is a finding that did not fail the render.
type Diagnostic struct {
	Severity string // "warning"
	Message  string

	// For a catalog skew: the catalog, the version the instance requires,
	// the one the platform carries (which the render used), and whether
	// the instance's is newer (always, for a skew row).
	Path            string
	InstanceVersion string
	PlatformVersion string
	Newer           bool
}
