// Package kernel is a small, real CUE kernel: it builds a platform from a
// platform module on disk and renders instances against it.
//
// A render is a pipeline of three steps, each in a file of its own:
//
//   - Read: [Kernel.ReadInstance] reads an instance module once into an
//     [InstanceSnapshot], and a render reads the platform's directory
//     again, each file hashed as it is read (read.go). The
//     kernel trusts no directory: every read goes through an [os.Root],
//     refuses what is not a regular file or directory or leads out of the
//     module ([*FileError]) and stops at the Kernel's [Limits]
//     ([*LimitError]), before anything is parsed.
//   - Evaluate: the instance is checked against the catalogs the
//     platform carries (its skew governed by a [SkewPolicy]) and against
//     the platform's content ([Platform].Digest), then evaluated under
//     the kernel's #Render (prepare.go, render.go).
//   - Decode: the resources, one per component in a stable order, come
//     out as a [RenderOutput] (decode.go), which marshals itself for
//     another process or a cache (output.go).
//
// A render's result is what CUE's evaluation of #Render gives. Where the
// platform is one BuildPlatform returned and the instance is valid under
// #Instance, the resources are assembled in Go from CUE's own evaluation
// of the instance instead (assemble.go); a differential test holds the two
// equal, and BenchmarkRenderPaths measures what the shortcut saves.
//
// What a render reads of its platform is known before it evaluates, and
// stated in one place (dependencies.go): [ReadsOf] parses an instance's
// files for the catalogs its requires field names (every catalog, where a
// parse cannot tell), and [Reads.Dependencies] digests the platform's
// name, type and labels (and whether its module sets the type), the skew
// policy, and what the platform carries of those catalogs; a module that
// writes its name, type or a label with a default, which an instance's
// label overrides, adds its whole content. A test renders against the
// platform projected to that set alone and requires the same result.
//
// Platform and instance modules are CUE modules that stand alone: a
// cue.mod/module.cue with no dependencies (the kernel uses no registry)
// and one package at the module's root, written in any of CUE's forms.
// Package [leasekit.dev/platform/platformmodule] states and generates a
// platform module's shape; Example_modules writes both by hand. Catalog
// versions are semantic versions, with or without a leading 'v'.
//
// Every error a method returns begins with "kernel: ", once, and is plain
// data that retains nothing of the evaluation: an [*Error] lists every
// problem at its positions in the user's files; a [*CatalogError] or
// [*SkewError] names a catalog at fault; a [*ContentError] a platform
// directory that changed. The exception is ctx.Err(), returned as it is.
// [IsContent] and [IsRefusal] classify an error, and [EncodeError] and
// [DecodeError] carry one across a process.
//
// CUE's evaluator cannot be cancelled; package
// [leasekit.dev/platform/isolate] runs a Kernel's calls in worker
// processes that a context or a budget can kill.
package kernel
