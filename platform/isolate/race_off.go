//go:build !race

package isolate

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
