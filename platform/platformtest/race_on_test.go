//go:build race

package platformtest_test

const raceEnabled = true
