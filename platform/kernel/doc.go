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
// component, in a stable order. A render's result is what CUE's
// evaluation of the kernel's #Render gives. Where the platform is one
// BuildPlatform returned, its directory still holds that content, and
// the instance is valid under the kernel's #Instance with no label set
// twice with different values and no spec that sets replicas, a render is
// assembled in Go from CUE's evaluation of the instance under #Instance
// (defaults and disjunctions resolved by CUE) and what BuildPlatform
// decoded, with nothing #Render does not state; a differential test holds
// it equal to the stock loader's evaluation of #Render. Any other render,
// and every one that fails, is evaluated in CUE under #Render.
// Every render reads and hashes the platform's directory; while its
// digest matches, only the package clause and imports of its files are
// parsed, all the loader needs to choose the files it reads.
//
// An instance is read once: Kernel.ReadInstance reads its files, hashing
// them as they are read, into an InstanceSnapshot (a plain tree within
// the limits whole and unparsed, any other as the loader reads it), and a
// render renders the snapshot's bytes and reads nothing of the instance
// again. Render of
// an Instance is the render of its snapshot, so a caller that keys a
// result on the snapshot's digest keys it on what was rendered.
//
// # Modules
//
// A platform module and an instance module are each a CUE module that
// stands alone: a cue.mod/module.cue with the module path and language
// version and no dependencies, and one package at the module's root. Its
// files may use any of CUE's forms (defaults, disjunctions, let,
// comprehensions, embedding, hidden fields, definitions): what counts is
// the value CUE evaluates. Names are DNS labels (lower-case letters,
// digits and '-', at most 63 bytes), kinds upper-case-initial
// identifiers, labels Kubernetes label keys and values.
//
// A platform module's package, which [leasekit.dev/platform/platformmodule]
// generates, holds:
//
//	name: "acme"                    // required, a name
//	type: "edge"                    // optional, a name; "standard" when absent
//	labels: team: "platform"        // optional; added to every resource
//	catalogs: "example.com/catalogs/web@v1": {
//		version: "v1.4.0"           // required, of the path's major version
//		enabled: true               // optional; true when absent
//		kinds: ["Deployment"]       // optional; absent or empty: any kind
//	}
//
// An instance module's package holds:
//
//	name:      "shop"               // required, a name
//	namespace: "prod"               // optional; set on every resource when present
//	requires: "example.com/catalogs/web@v1": "v1.2.0" // the catalog versions it was written against
//	labels: tier: "frontend"        // optional; added to every resource
//	components: web: {              // named by a name; each renders one resource
//		kind:     "Deployment"      // required, a kind its catalog provides
//		catalog:  "example.com/catalogs/web@v1" // required; must be in requires
//		replicas: 2                 // optional, an int >= 0; 1 when absent
//		labels: role: "frontend"    // optional
//		spec: image: "shop:1"       // optional, concrete; a replicas here must equal the one rendered
//	}
//
// Every catalog a component uses must be in the instance's requires, and
// every catalog it requires must be one the platform carries, enabled. A
// component renders as one resource: apiVersion "leasekit.dev/v1alpha1",
// its kind, metadata.name "<name>-<component>", the namespace, the
// labels of the platform, the instance and the component together with
// app.kubernetes.io/instance (the name), app.kubernetes.io/managed-by
// ("leasekit"), app.kubernetes.io/name (the component),
// platform.leasekit.dev/name and platform.leasekit.dev/type (a key set
// twice must agree), annotations naming the catalog and the version the
// platform carries, and the spec with replicas. The package's example
// Example_modules writes both modules by hand and renders them.
//
// Errors name files relative to their module: an [*Error] lists every
// problem found, each at its positions in the user's files, with the
// module's directory once, in front. Every error a method returns begins
// with "kernel: ", once, also when it wraps another of the kernel's; a
// join (one error for each catalog at fault) says each of its errors on
// a line of its own, each so. The exception is ctx.Err(), returned as it
// is.
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
// registry. Vendored packages (a cue.mod/pkg, cue.mod/gen or cue.mod/usr
// that holds a file, a link or anything else but directories) and
// cue.mod/local-module.cue are refused with a *FileError. An empty
// cue.mod/pkg, gen or usr, or one holding empty directories only, vendors
// nothing (CUE finds a package there only in a directory of CUE files)
// and is read as if it were absent, however the module is read: a tool
// may leave one, and an archive keeps it where git would not. Packages of
// the module itself may be imported.
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
// # Evaluation that can be stopped
//
// CUE's evaluator cannot be cancelled, and a few bytes of CUE can take it
// minutes and gigabytes. A Kernel evaluates in the caller's process and
// knows nothing of processes; package [leasekit.dev/platform/kernel/isolate]
// wraps a Kernel and runs each build and render in a worker process that
// a cancelled context or a time or memory budget can kill, with the
// Kernel's results and errors. The values it sends between processes
// travel as this package encodes them: a [Platform] and an
// [InstanceSnapshot] in JSON, an error by [EncodeError] and [DecodeError].
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

// The files read as a pipeline, each using only those before it:
//
//   - kernel.go: the Kernel and its Limits, which every call reads under.
//   - errors.go: every error type of the kernel, and the one table that
//     says how each crosses a process and whether it is about the input's
//     content (adding an error type changes this file alone); flatten.go
//     reduces any error to plain data by that table.
//   - vocabulary.go: the kernel's own CUE (schema.cue, render.cue);
//     problems.go turns a CUE error into an *Error at the user's
//     positions, hiding the vocabulary's.
//   - Read: ahead.go (a read on a goroutine of its own), digest.go (the
//     one content digest), depth.go (the nesting scan), source.go and
//     openflags_*.go (an os.Root, or files in memory), modulefs.go (the
//     loader's bounded reads), module.go (the module file).
//   - Load: load.go (the CUE loader over a moduleFS), plainread.go (the
//     same files read whole, unparsed), snapshot.go (an instance read
//     once: plainly, or as the loader reads it).
//   - Evaluate: written.go (an instance's value as written and under
//     #Instance).
//   - Check: rules.go (value rules), build.go (a platform evaluated,
//     checked and decoded: BuildPlatform), catalogs.go (the catalogs and
//     the skew), prepare.go (a render loaded and checked, its platform's
//     content included).
//   - Assemble: decode.go (resources decoded from #Render), assemble.go
//     (resources assembled in Go), render.go (Render: assembled, or
//     evaluated under #Render and decoded).
//   - codec.go: a Platform, an InstanceSnapshot and an error as plain
//     data, for another process.
