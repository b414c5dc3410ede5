package platformtest

// CheckTB is Check on any rapid.TB, with the sequences' roots under base:
// the tests run it on a fake to see it fail.
var CheckTB = check
