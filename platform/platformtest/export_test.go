package platformtest

// CheckTB is Check on any rapid.TB, with the sequences' roots under base:
// the tests run it on a fake to see it fail.
var CheckTB = check

// DeadlineBound sets the deadline bound Check takes from a *testing.T's
// deadline, for CheckTB, whose TB has none: the bound passes when passed
// is closed, as Check's closes shortly before the test's deadline.
func DeadlineBound(passed <-chan struct{}) Option {
	return func(c *config) { c.deadline = passed }
}
