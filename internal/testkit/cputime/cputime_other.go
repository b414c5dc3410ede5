//go:build !unix

package cputime

import "time"

// Process reports no CPU time: this system has no figure for it.
func Process() (time.Duration, bool) { return 0, false }
