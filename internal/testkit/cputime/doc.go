// Package cputime reads the CPU time the process has used, user and
// system, for benchmarks that report it beside the wall clock: on a shared
// machine it is the steadier measure of work. [Process] is safe for
// concurrent use; where the system has no such figure (outside unix) it
// reports none.
package cputime
