package publish_test

import (
	"testing"

	"leasekit.dev/publish"
)

// The zero Outcome is no outcome: it never reads as one of the constants.
func TestZeroOutcome(t *testing.T) {
	var zero publish.Outcome
	for _, o := range []publish.Outcome{publish.Failed, publish.Published, publish.Unchanged, publish.Changed, publish.BuildFailed, publish.Stale} {
		if zero == o || zero.String() == o.String() {
			t.Errorf("the zero Outcome is %v (%d), want no outcome", o, int(o))
		}
	}
}
