// Package crash re-executes a test binary to run one test as a child
// process, and kills that child with SIGKILL at a point the child names:
// the harness of a crash test. The child calls [Child] first and [Ready]
// once it has reached the point from which a kill is meaningful; the
// parent's [Start] returns then, and [Process.Kill] kills it a chosen
// while later.
//
// The harness cannot pass by doing nothing: Start fails the test unless
// the child reached Ready (a child that names no test, skips, fails or
// returns first fails it), and Kill fails it unless the child was still
// running when it was killed. A child that never reaches Ready and never
// ends blocks Start until the test binary's own timeout; one the test
// does not kill is killed when the test ends, in its cleanup.
//
// It works only where SIGKILL does (Unix). A Process is used by one
// goroutine, the test's.
package crash
