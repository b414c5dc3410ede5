package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PlatformName is the name of the one Platform a cluster holds: the API
// server refuses a Platform with any other name.
const PlatformName = "cluster"

// Skew policies, the spellings of PlatformSpec.SkewPolicy.
const (
	SkewWarn   = "Warn"
	SkewRefuse = "Refuse"
)

// PlatformSpec is the platform generator's input and the skew policy every
// render against the platform uses.
type PlatformSpec struct {
	// Name is the platform's name, a DNS label that is not a device name
	// Windows reserves (it is an element of the platform module's path).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['con', 'prn', 'aux', 'nul', 'com1', 'com2', 'com3', 'com4', 'com5', 'com6', 'com7', 'com8', 'com9', 'lpt1', 'lpt2', 'lpt3', 'lpt4', 'lpt5', 'lpt6', 'lpt7', 'lpt8', 'lpt9'])",message="must not be a device name Windows reserves: it is an element of the platform module's path"
	Name string `json:"name"`

	// Type is the platform's type, a DNS label; empty means "standard".
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Type string `json:"type,omitempty"`

	// Labels are added to every resource rendered against the platform.
	// Keys are Kubernetes label keys (an optional DNS subdomain prefix of
	// at most 253 bytes and '/', then a name of 1 to 63 letters, digits,
	// '-', '_' or '.', starting and ending with a letter or digit), values
	// Kubernetes label values. Admission checks the values; the keys only
	// the generator checks: a structural schema gives a map's keys no
	// length bound, so a CEL rule matching them has no bounded cost.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// Catalogs are the component catalogs the platform carries, one per
	// path.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=128
	Catalogs []Catalog `json:"catalogs,omitempty"`

	// SkewPolicy says what a render does when an instance requires a newer
	// catalog version than the platform carries: Warn renders against the
	// platform's version with a diagnostic, Refuse fails the render.
	// +optional
	// +kubebuilder:default=Warn
	// +kubebuilder:validation:Enum=Warn;Refuse
	SkewPolicy string `json:"skewPolicy,omitempty"`

	// Overlay is CUE source added to the generated platform package, as the
	// file overlay.cue after a "package platform" line the controller
	// writes: further constraints on the platform's catalogs and labels.
	// The platform build unifies it with the generated file and the
	// kernel's schema; a conflict fails the build with its positions, and
	// line N of this field is line N+1 of overlay.cue.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Overlay string `json:"overlay,omitempty"`
}

// A LabelValue is a Kubernetes label value: empty, or at most 63
// letters, digits, '-', '_' or '.', starting and ending with a letter or
// digit.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
type LabelValue string

// A Catalog is one component catalog a platform carries.
// +kubebuilder:validation:XValidation:rule="!self.path.contains('@v') || (self.version.startsWith('v') ? self.version.substring(1) : self.version).split('.')[0] == self.path.substring(self.path.lastIndexOf('@v') + 2)",message="version must have the major version of the path's @vN",fieldPath=".version"
type Catalog struct {
	// Path is the catalog's CUE module path with its major version, such as
	// "example.com/catalogs/web@v1": slash-separated elements of lower-case
	// letters and digits joined by '.', '_', '__' or dashes, the first a
	// domain with a dot (no '_'), then "@v" and the major version. No
	// element, up to its first dot, is a device name Windows reserves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(-+[a-z0-9]+)*([.][a-z0-9]+(-+[a-z0-9]+)*)+(/[a-z0-9]+(([.]|_|__|-+)[a-z0-9]+)*)*@v(0|[1-9][0-9]*)$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)(con|prn|aux|nul|com[1-9]|lpt[1-9])([.][^/@]*)?(/|@)')",message="no element of the path may be a device name Windows reserves (con, prn, aux, nul, com1 to com9, lpt1 to lpt9)"
	Path string `json:"path"`

	// Version is the catalog's semantic version, with the major version of
	// Path, such as "v1.4.2" or "1.4.2": MAJOR.MINOR.PATCH with optional
	// prerelease and build metadata, as Semantic Versioning 2.0.0 writes
	// it, which the platform generator requires too.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-((0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`
	Version string `json:"version"`

	// Kinds are the component kinds the catalog provides, such as
	// "Deployment", each an identifier starting with an upper-case letter.
	// A catalog that lists no kinds provides any kind.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kinds []string `json:"kinds,omitempty"`

	// Disabled keeps the catalog in the platform but lets no instance use it.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
}

// Condition types of a Platform.
const (
	// PlatformReady is True while the controller serves the platform of
	// the object's current generation, and False with a reason while it
	// serves an older one (or none).
	PlatformReady = "Ready"
	// PlatformPublished is True once any generation is published and
	// served; its message names the generation.
	PlatformPublished = "Published"
	// PlatformBuildFailed is True while the current generation's spec
	// cannot be published: the generator refused it or the kernel's build
	// failed. The message names every problem, with positions.
	PlatformBuildFailed = "BuildFailed"
	// PlatformStale is True when the controller refused the object's
	// generation as older than the one it serves.
	PlatformStale = "Stale"
)

// PlatformStatus is what the controller serves.
type PlatformStatus struct {
	// ObservedGeneration is the last .metadata.generation the controller
	// acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PublishedGeneration is the generation whose platform renders use: the
	// current one once published, an older one while a newer spec fails to
	// build.
	// +optional
	PublishedGeneration int64 `json:"publishedGeneration,omitempty"`

	// Catalogs is the number of catalogs the published platform carries.
	// +optional
	Catalogs int32 `json:"catalogs,omitempty"`

	// Conditions are Ready, Published, BuildFailed and Stale.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Platform describes the cluster's platform: the catalogs it carries and the
// labels it adds. There is one, named "cluster".
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster'",message="the Platform is a singleton: its name must be 'cluster'"
// +kubebuilder:printcolumn:name="Platform",type=string,JSONPath=`.spec.name`
// +kubebuilder:printcolumn:name="Published",type=integer,JSONPath=`.status.publishedGeneration`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Platform struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PlatformSpec   `json:"spec"`
	Status PlatformStatus `json:"status,omitempty"`
}

// PlatformList is a list of Platforms.
//
// +kubebuilder:object:root=true
type PlatformList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Platform `json:"items"`
}
