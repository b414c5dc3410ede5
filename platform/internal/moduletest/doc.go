// Package moduletest is the module fixture set of the kernel's, isolate's
// and the platform's tests: the acme platform and its catalogs, generated
// into a temporary directory or built in process, its variants one after
// another for publishing, and instance modules named shop with any number
// of components that render against it.
//
// Every function writes under a directory of its own (the test's
// temporary directory, or a fresh one for examples) and fails the test on
// any error, so a fixture either stands complete or the test has stopped;
// Variant, which writes nothing, panics if it cannot generate.
// The functions are safe for concurrent use; Acme is a value to copy, not
// to change.
package moduletest
