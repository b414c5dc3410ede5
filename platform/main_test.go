package platform_test

import (
	"os"
	"testing"

	"leasekit.dev/platform/isolate"
)

// TestMain serves as a kernel worker when the tests' Workers start this
// binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}
