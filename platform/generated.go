package platform

import "leasekit.dev/platform/kernel"

// Generated is the process-local record of the platform module generated and
// built for one Platform resource generation: the generation, the module
// directory on the process's own disk (a per-generation directory under
// [Layout.Root]), the platform the kernel built from it and the skew policy
// the resource resolved to. The render path consumes it through
// [Store.Lease]; the module is never published or served elsewhere.
type Generated struct {
	// Generation is the resource's .metadata.generation the record was
	// built for; generations start at 1.
	Generation int64

	// Dir is the module directory, [Layout.Dir] of Generation.
	Dir string

	// Platform is what [kernel.Kernel.BuildPlatform] built from Dir.
	Platform *kernel.Platform

	// Skew is the resolved skew policy ([kernel.SkewWarn], the zero value,
	// when unset), passed verbatim as [kernel.RenderInput.Skew] by every
	// render of this generation.
	Skew kernel.SkewPolicy
}
