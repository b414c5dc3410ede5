// Package readme keeps the repository README's Go snippets compiled: its
// test holds each snippet, verbatim, inside a function that compiles
// against the real modules, and fails when a ```go block of the README and
// the snippet it mirrors differ. It also checks that the quick start's
// excerpt of the operator demo's summary uses the labels the demo prints.
//
// The package has no code of its own; there is nothing to call and nothing
// to run concurrently.
package readme
