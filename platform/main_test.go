package platform_test

import (
	"os"
	"testing"

	"leasekit.dev/platform/kernel"
)

// TestMain serves as a kernel worker when the tests' Workers start this
// binary as one.
func TestMain(m *testing.M) {
	kernel.MainWorker()
	os.Exit(m.Run())
}
