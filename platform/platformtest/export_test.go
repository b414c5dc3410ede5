package platformtest

import "time"

// CheckTB is Check on any rapid.TB, with the sequences' roots under base:
// the tests run it on a fake to see it fail.
var CheckTB = check

// HangAt sets the deadline bound Check takes from a *testing.T's deadline,
// for CheckTB, whose TB has none.
func HangAt(at time.Time) Option { return func(c *config) { c.hangAt = at } }
