// Package kernel is a small, real CUE kernel: it builds a platform from a
// platform module on disk and renders instances against it.
//
// [Kernel.BuildPlatform] is a shape-gated loader: it loads the module with
// no registry and no network, unifies it with the kernel's embedded
// #Platform schema and validates it concretely; every problem comes back in
// one [*Error], each with its file positions. [Kernel.Render] loads the
// platform's directory and an instance module, checks the catalog versions
// the instance requires against those the platform carries (the catalog
// skew, governed by a [SkewPolicy]) and evaluates the render: one resource
// per component, in a stable order.
//
// Catalog versions are semantic versions as Semantic Versioning 2.0.0
// writes them, with or without a leading 'v': "1.4.2" equals "v1.4.2",
// a prerelease is older than its release and build metadata is ignored.
// Every result carries a version as its module wrote it. A catalog that
// lists no kinds provides any kind.
//
// A Kernel is safe for concurrent use by multiple goroutines with no
// mutex: every call builds in a [cue.Context] of its own and retains
// nothing, so memory does not grow with the number of calls. Its errors
// retain nothing either: an [*Error], a [*SkewError] or a [*CatalogError]
// is plain data (messages and positions as strings), never a CUE value or
// error, so a caller may keep the last one as long as it likes. A Render
// loads the platform module on a second goroutine while it loads the
// instance, and returns only after that goroutine has ended. A cancelled
// context stops a call at the next step.
package kernel
