// Package rules holds the value rules that the generator and the kernel
// share: DNS labels, label keys and values, kinds, catalog paths and
// versions. Each check returns the rule broken, in words, or "" for a valid
// value. The checks are pure functions, safe for concurrent use.
package rules
