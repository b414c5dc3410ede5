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
