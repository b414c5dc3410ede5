// Package testkit holds, one package each, the test harnesses that the
// tests of several leasekit modules share: [leasekit.dev/internal/testkit/crash]
// kills a test's child process at a point it names,
// [leasekit.dev/internal/testkit/gentree] is a large generated tree for
// benchmarks, [leasekit.dev/internal/testkit/memstat] reads the memory
// figures they report, [leasekit.dev/internal/testkit/cputime] the CPU
// time, [leasekit.dev/internal/testkit/dirtree] writes a test's tree and
// reads it back and [leasekit.dev/internal/testkit/depth] tells a
// property test how many cases the run draws.
//
// It is a module of its own, on the standard library alone, so that every
// module's tests can import it without an import cycle and without
// reaching CUE or controller-runtime through it; its path is internal, so
// only leasekit's own modules can.
package testkit
