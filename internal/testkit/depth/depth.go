// Package depth tells a property test how many cases the run draws, so
// that a check of what a generator reached (both outcomes drawn, a rare
// case met) is judged only where enough cases make missing it a defect
// rather than chance.
//
// The number is rapid's own: -rapid.checks, whose default RAPID_CHECKS
// sets. It is safe for concurrent use once flags are parsed.
package depth

import (
	"flag"
	"strconv"
)

// AtLeast reports whether this run draws at least n cases of each rapid
// property test. It reports false when the binary has no rapid flag or
// its value is not a number.
func AtLeast(n int) bool {
	f := flag.Lookup("rapid.checks")
	if f == nil {
		return false
	}
	got, err := strconv.Atoi(f.Value.String())
	return err == nil && got >= n
}
