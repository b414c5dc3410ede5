package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test leaves no goroutine behind: the Publisher's reclaim loop ends
// with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
