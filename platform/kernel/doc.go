// Package kernel is a small, real CUE kernel: it builds a platform from a
// platform module on disk and renders instances against it.
//
// [Kernel.BuildPlatform] is a shape-gated loader: it loads the module with
// no registry and no network, unifies it with the kernel's embedded
// #Platform schema and validates it concretely; every problem comes back in
// one [*Error], each with its file positions. [Kernel.Render] loads the
// platform's directory and an instance module, checks the catalog versions
// the instance requires against those the platform carries (the catalog
// skew, governed by a [SkewPolicy]) and renders: one resource per
// component, in a stable order. Where the result is certain to be what
// the kernel's #Render evaluates (a Platform that BuildPlatform returned,
// an instance valid under the kernel's #Instance, no label set twice with
// different values, no spec that sets replicas), a render is assembled in
// Go from the instance and from what BuildPlatform decoded of the
// platform's content, which the render has just read again and found
// unchanged. Any other render, and every one that fails, is evaluated in
// CUE under #Render, so its errors carry the positions of both modules.
// Every render reads and hashes the platform's directory; while its
// digest matches, only the package clause and imports of its files are
// parsed, all the loader needs to choose the files it reads.
//
// Catalog versions are semantic versions as Semantic Versioning 2.0.0
// writes them, with or without a leading 'v': "1.4.2" equals "v1.4.2",
// a prerelease is older than its release and build metadata is ignored.
// Every result carries a version as its module wrote it. A catalog that
// lists no kinds provides any kind.
//
// # The kernel trusts no directory
//
// Every module is read through an [os.Root]: a name never leads out of
// the module's directory. Only regular files and directories are read;
// a named pipe, socket or device fails the call with a [*FileError] that
// names it, and is never read (it is described before it is opened, and
// opened without blocking). A symbolic link is followed when its target
// resolves within the module, and refused when it leads out or to nothing.
// The directory given to BuildPlatform, or as an instance's Dir, is the
// caller's path and may itself be a link.
//
// Input is bounded before it is parsed: the size of each file, the size
// and number of a module's files, the nesting depth of each CUE or JSON
// file (its fields, brackets, operators and interpolations, counted by a
// scan of its bytes, linear in its size), and the
// number of an instance's components. The bounds are the Kernel's
// [Limits], whose defaults sit far above real modules; input past one
// fails the call with a [*LimitError] naming the limit, the file and the
// value.
//
// A module file (cue.mod/module.cue) is accepted when the loader's own
// rules accept it and it declares no dependencies, however spelt: a
// platform or instance module must stand alone, since the kernel uses no
// registry. Vendored packages (cue.mod/pkg, cue.mod/gen, cue.mod/usr) and
// cue.mod/local-module.cue are refused with a *FileError. Packages of the
// module itself may be imported.
//
// # A platform is bound to its content
//
// Each file is read once and hashed as it is read. BuildPlatform records
// the digest of every file it read, module file included, in
// [Platform.Digest]; Render computes the digest of what it loads from the
// platform's directory and refuses, with a [*ContentError], a directory
// that no longer holds what the platform was built from, under either
// skew policy: the catalog and skew checks ran against the built
// platform, and hold for that content only.
//
// # Concurrency
//
// A Kernel is safe for concurrent use by multiple goroutines with no
// mutex: every call builds in a [cue.Context] of its own and retains
// nothing, so memory does not grow with the number of calls. Its errors
// retain nothing either: an [*Error], a [*SkewError], a [*CatalogError],
// a [*ContentError], a [*FileError] or a [*LimitError] is plain data
// (messages and positions as strings), never a CUE value or error, so a
// caller may keep the last one as long as it likes. Loading runs
// on goroutines of the call's own: a build loads its module on one, a
// render loads the platform on one while it loads the instance (on
// another, for an instance in a directory). A cancelled context stops a
// call at the next step, and while a load is blocked in a read the call
// returns ctx.Err() at once; the loading goroutine then reads nothing
// more and ends once its current read returns. Otherwise a call returns
// only after its goroutines have ended.
package kernel
