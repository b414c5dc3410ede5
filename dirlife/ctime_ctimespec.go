//go:build darwin || freebsd || netbsd

package dirlife

import "syscall"

// ctimeOf returns the change time st tells, in nanoseconds since the Unix
// epoch.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
