// Package memstat reads a process's own memory figures on Linux, for the
// memory measurements of benchmarks and tests: [Status] returns a field
// of /proc/self/status (VmRSS, VmHWM) in bytes, and [ResetPeak] starts
// VmHWM again from the present RSS. Both are safe for concurrent use.
package memstat
