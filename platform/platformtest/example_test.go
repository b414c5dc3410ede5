package platformtest_test

import (
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/platformtest"
)

// An operator checks its own reconciler (here operator, which keeps a
// Store and a Layout by hand) in its tests: Check drives it through random
// reconciles, deletes, restarts and renders, and fails the test with the
// shortest sequence it found when a property breaks.
func ExampleCheck() {
	testReconciler := func(t *testing.T) { // func TestReconciler(t *testing.T) in a _test.go file
		platformtest.Check(t, func(root string) (platformtest.Target, error) {
			r := &operator{layout: platform.Layout{Root: root}}
			if err := r.layout.Reset(); err != nil { // the boot step, before any reader
				return nil, err
			}
			return r, nil
		})
	}
	_ = testReconciler
}
