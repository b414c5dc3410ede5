//go:build aix || dragonfly || linux || openbsd || solaris

package dirlife

import "syscall"

// ctimeOf returns the change time st tells, in nanoseconds since the Unix
// epoch.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
