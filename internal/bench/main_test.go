package bench

import (
	"os"
	"testing"

	"leasekit.dev/platform/isolate"
)

// TestMain serves as a kernel worker when the Workers of a benchmark
// start this binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}
