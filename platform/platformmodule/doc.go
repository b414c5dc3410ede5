// Package platformmodule generates the CUE module of a platform: a
// self-contained module (cue.mod/module.cue and the platform package) that
// [leasekit.dev/platform/kernel.Kernel.BuildPlatform] accepts.
//
// [Generate] is pure and deterministic: the same [Input] gives
// byte-identical files, whatever the order of its catalogs. Source is built
// as CUE syntax and printed by the CUE formatter, never pasted from
// strings, so no input value can inject CUE. Invalid input is refused with
// an [*InputError] naming the field.
//
// Only a catalog's Path and Version are needed: a Version may be written
// with or without a leading 'v' ("1.4.2" or "v1.4.2") and is generated as
// written, and a catalog that lists no Kinds provides any kind.
//
// A platform module's package, which [leasekit.dev/platform/kernel]
// builds, holds (a module written by hand holds the same, in any of CUE's
// forms: what counts is the value CUE evaluates):
//
//	name: "acme"                    // required, a DNS label
//	type: "edge"                    // optional, a DNS label; "standard" when absent
//	labels: team: "platform"        // optional; added to every resource
//	catalogs: "example.com/catalogs/web@v1": {
//		version: "v1.4.0"           // required, of the path's major version
//		enabled: true               // optional; true when absent
//		kinds: ["Deployment"]       // optional; absent or empty: any kind
//	}
//
// Generate is safe for concurrent use.
package platformmodule
