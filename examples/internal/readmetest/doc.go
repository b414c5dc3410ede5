// Package readmetest reads the repository's README for the tests that hold
// it to the code: [Read] finds and reads it, [Fenced] returns its fenced
// blocks of a language and [Marked] the regions of a source file marked
// as its snippets. A block or region left open at the end is returned
// too, so that a missing closing line shows as a difference rather than
// as a block that silently is not there. Its functions are pure and safe
// for concurrent use.
package readmetest
