package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReleaseSpec is an instance module, rendered against the platform the
// controller serves.
type ReleaseSpec struct {
	// Files are the instance module's files by slash-separated relative
	// path, cue.mod/module.cue included: at most 64 files, and at most
	// MaxFilesChars (262144) characters in all, names and contents, which
	// is at most 1 MiB in UTF-8. With a status within its bound (see
	// ReleaseStatus) a Release stays well under the API server's object
	// size limit, so its status can always be written.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 262144",message="the files hold at most 262144 characters in all, names and contents (1 MiB in UTF-8)"
	Files map[string]string `json:"files"`
}

// MaxFilesChars bounds the characters (Unicode code points) of a
// Release's files, names and contents together; admission refuses more.
const MaxFilesChars = 262144

// Bounds of a Release's status. With them the status is at most about
// 90 KiB: the resources' list, the diagnostics, the instance's name and
// the Rendered condition's message (8 KiB) together.
const (
	// MaxStatusResourcesBytes bounds status.resources, as JSON. A render
	// whose list is longer leaves the list out; status.resourceCount
	// and status.resourcesDigest still describe it, and Rendered's reason
	// is ResourcesOmitted.
	MaxStatusResourcesBytes = 64 << 10
	// MaxStatusDiagnostics bounds status.diagnostics; the last one kept
	// says how many more there were.
	MaxStatusDiagnostics = 16
	// MaxStatusDiagnosticBytes bounds each diagnostic, cut with a mark.
	MaxStatusDiagnosticBytes = 1024
	// MaxStatusInstanceBytes bounds status.instance, cut with a mark.
	MaxStatusInstanceBytes = 253
)

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
	// ReleaseRendered is True when the spec of the condition's
	// observedGeneration rendered against the platform generation in
	// status.platformGeneration (and renders so against every later one
	// with the same status.dependenciesDigest), False with the render's
	// error otherwise.
	ReleaseRendered = "Rendered"

	// ReasonRendered: the render succeeded.
	ReasonRendered = "Rendered"
	// ReasonResourcesOmitted: the render succeeded, and its list of
	// resources is longer than the status holds (MaxStatusResourcesBytes):
	// status.resources is empty, status.resourceCount and
	// status.resourcesDigest describe the list.
	ReasonResourcesOmitted = "ResourcesOmitted"
	// ReasonRenderFailed: the instance does not render against the
	// platform; the message lists the problems, or names the time or
	// memory budget its evaluation went past (that spec is not rendered
	// again until it changes). A worker that died without answering is
	// not a verdict: its render is retried, and never recorded so.
	ReasonRenderFailed = "RenderFailed"
	// ReasonPlatformNotReady: no Platform exists (none was created, or it
	// was deleted), or the controller refused the one that exists and
	// serves none; the release renders once one is served. While a
	// Platform exists that the controller has not yet published (a new
	// leader, a restart), the Release is not written at all.
	ReasonPlatformNotReady = "PlatformNotReady"
)

// ReleaseStatus is the outcome of the last render.
type ReleaseStatus struct {
	// ObservedGeneration is the .metadata.generation last rendered.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PlatformGeneration is the platform generation the verdict was
	// rendered against. A later generation whose DependenciesDigest for
	// this Release is the same leaves the verdict, and this field, as
	// they were: the verdict is valid for it too.
	// +optional
	PlatformGeneration int64 `json:"platformGeneration,omitempty"`

	// Instance is the instance's name, from its module, cut to
	// MaxStatusInstanceBytes with a mark.
	// +optional
	Instance string `json:"instance,omitempty"`

	// Resources are the rendered resources, ordered by component; empty
	// when their list, as JSON, is longer than MaxStatusResourcesBytes
	// (Rendered's reason is then ResourcesOmitted).
	// +optional
	// +listType=atomic
	Resources []RenderedResource `json:"resources,omitempty"`

	// ResourceCount is the number of resources the render produced, listed
	// in Resources or not.
	// +optional
	ResourceCount int32 `json:"resourceCount,omitempty"`

	// ResourcesDigest is "sha256:" and the hex SHA-256 of the whole list
	// of rendered resources as JSON (component, kind and name, ordered by
	// component), listed in Resources or not.
	// +optional
	ResourcesDigest string `json:"resourcesDigest,omitempty"`

	// Diagnostics are the render's findings that did not fail it, such as
	// a catalog skew under the Warn policy: at most MaxStatusDiagnostics,
	// each at most MaxStatusDiagnosticBytes.
	// +optional
	// +listType=atomic
	Diagnostics []string `json:"diagnostics,omitempty"`

	// InputsDigest is "sha256:" and the hex SHA-256 of what the render's
	// verdict is a function of: the spec's files, the evaluator's limits
	// and the controller's build, and DependenciesDigest (what the render
	// reads of the platform) or, for a render killed past a budget, the
	// time and memory budgets instead. Empty when no render was decided
	// (PlatformNotReady). A status whose MAC verifies and whose
	// InputsDigest is the one of the current inputs is the controller's
	// verdict: it is neither evaluated nor written again, on a new
	// platform generation, after a restart or by another replica.
	// +optional
	InputsDigest string `json:"inputsDigest,omitempty"`

	// DependenciesDigest is "sha256:" and the hex SHA-256 of exactly what
	// the render read of the platform for this Release: the platform's
	// name, type and labels, the presence, version, kinds and state of
	// the catalogs the instance requires or uses, and the skew policy. A
	// later platform generation that leaves them as they were leaves the
	// render valid: the Release is then neither evaluated nor written,
	// and PlatformGeneration keeps naming the generation it was rendered
	// against. Empty for a render killed past a budget (its verdict holds
	// whatever the platform) and when no render was decided.
	// +optional
	DependenciesDigest string `json:"dependenciesDigest,omitempty"`

	// MAC is "hmac-sha256:" and the hex HMAC-SHA256, under a key only the
	// controller holds (a Secret in its namespace), of the verdict: the
	// Release's UID, ObservedGeneration, PlatformGeneration, Instance,
	// Resources, ResourceCount, ResourcesDigest, Diagnostics,
	// InputsDigest, DependenciesDigest and the Rendered condition's
	// status, reason, message and observedGeneration. It proves that the
	// controller wrote this verdict for this Release at this generation:
	// a status written by anyone else, copied from another Release, or
	// made under a key since rotated, fails it, and one the controller
	// wrote for an earlier generation or other inputs no longer holds;
	// either is evaluated again. It neither hides the verdict nor stops whoever
	// may write the status from deleting or replacing it: that costs an
	// evaluation, never a verdict the controller did not make.
	// +optional
	MAC string `json:"mac,omitempty"`

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
// +kubebuilder:printcolumn:name="Generation",type=integer,JSONPath=`.metadata.generation`,description="The spec's generation"
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedGeneration`,description="The spec's generation the status is the verdict of: the status is current when it equals Generation"
// +kubebuilder:printcolumn:name="Rendered-At",type=integer,JSONPath=`.status.platformGeneration`,description="The platform generation last rendered against; the verdict holds for every later generation that leaves its dependencies as they were"
// +kubebuilder:printcolumn:name="Rendered",type=string,JSONPath=`.status.conditions[?(@.type=="Rendered")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Rendered")].reason`
// +kubebuilder:printcolumn:name="Dependencies",type=string,JSONPath=`.status.dependenciesDigest`,priority=1,description="The digest of what the render read of the platform"
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
