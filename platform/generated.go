package platform

import (
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

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

	// Dir is the module directory. A [Publisher] names it gen-<n>, or
	// gen-<n>-<digest> for a later content of the same generation; a
	// hand-written reconciler uses [Layout.Dir] of Generation.
	Dir string

	// Platform is what [kernel.Kernel.BuildPlatform] built from Dir.
	Platform *kernel.Platform

	// Skew is the resolved skew policy ([kernel.SkewWarn], the zero value,
	// when unset), passed verbatim as [kernel.RenderInput.Skew] by every
	// render of this generation.
	Skew kernel.SkewPolicy

	// Identity is the generation and the digest of the module's files, set
	// by a [Publisher]; zero in a record set by hand. Its Key is
	// Generation.
	Identity publish.Identity[int64]
}

// record is the generic publisher's record for g.
type record = publish.Record[int64, *kernel.Platform, kernel.SkewPolicy]

func recordOf(g Generated) record {
	return record{Key: g.Generation, Digest: g.Identity.Digest, Dir: g.Dir, Artifact: g.Platform, Value: g.Skew}
}

func generatedOf(r record) Generated {
	g := Generated{Generation: r.Key, Dir: r.Dir, Platform: r.Artifact, Skew: r.Value}
	if !r.Digest.IsZero() {
		g.Identity = r.Identity()
	}
	return g
}
