package bench

import (
	"os"
	"testing"

	"leasekit.dev/platform/kernel"
)

// TestMain serves as a kernel worker when the Workers of a benchmark
// start this binary as one.
func TestMain(m *testing.M) {
	kernel.MainWorker()
	os.Exit(m.Run())
}
