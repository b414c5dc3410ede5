package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReleaseSpec is an instance module, rendered against the platform the
// controller serves.
type ReleaseSpec struct {
	// Files are the instance module's files by slash-separated relative
	// path, cue.mod/module.cue included.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	Files map[string]string `json:"files"`
}

// A RenderedResource is one resource a render produced.
type RenderedResource struct {
	// Component is the component's name in the instance.
	Component string `json:"component"`
	// Kind is the resource's kind.
	Kind string `json:"kind"`
	// Name is the resource's metadata.name.
	Name string `json:"name"`
}

// Condition types and reasons of a Release.
const (
	// ReleaseRendered is True when the current spec rendered against the
	// platform generation in status.platformGeneration, False with the
	// render's error otherwise.
	ReleaseRendered = "Rendered"

	// ReasonRendered: the render succeeded.
	ReasonRendered = "Rendered"
	// ReasonRenderFailed: the instance does not render against the
	// platform; the message lists the problems.
	ReasonRenderFailed = "RenderFailed"
	// ReasonPlatformNotReady: no platform is published yet (or it was
	// deleted); the release renders once one is.
	ReasonPlatformNotReady = "PlatformNotReady"
)

// ReleaseStatus is the outcome of the last render.
type ReleaseStatus struct {
	// ObservedGeneration is the .metadata.generation last rendered.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PlatformGeneration is the platform generation the last render used.
	// +optional
	PlatformGeneration int64 `json:"platformGeneration,omitempty"`

	// Instance is the instance's name, from its module.
	// +optional
	Instance string `json:"instance,omitempty"`

	// Resources are the rendered resources, ordered by component.
	// +optional
	// +listType=atomic
	Resources []RenderedResource `json:"resources,omitempty"`

	// Diagnostics are the render's findings that did not fail it, such as
	// a catalog skew under the Warn policy.
	// +optional
	// +listType=atomic
	Diagnostics []string `json:"diagnostics,omitempty"`

	// Conditions holds Rendered.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// A Release is an instance module rendered against the cluster's platform.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Instance",type=string,JSONPath=`.status.instance`
// +kubebuilder:printcolumn:name="Platform",type=integer,JSONPath=`.status.platformGeneration`
// +kubebuilder:printcolumn:name="Rendered",type=string,JSONPath=`.status.conditions[?(@.type=="Rendered")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Rendered")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReleaseSpec   `json:"spec"`
	Status ReleaseStatus `json:"status,omitempty"`
}

// ReleaseList is a list of Releases.
//
// +kubebuilder:object:root=true
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Release `json:"items"`
}
