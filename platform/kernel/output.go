package kernel

// RenderOutput is the result of a Render.
type RenderOutput struct {
	Instance    string       // the instance's name
	Resources   []Resource   // one per component, ordered by component name
	Diagnostics []Diagnostic // findings that did not fail the render, ordered by catalog path
}

// A Resource is one rendered component.
type Resource struct {
	Component string // the component's name in the instance
	Kind      string
	Name      string // metadata.name

	// Object is the whole resource: apiVersion, kind, metadata (name,
	// namespace, labels, annotations) and spec, as decoded JSON values.
	Object map[string]any
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
