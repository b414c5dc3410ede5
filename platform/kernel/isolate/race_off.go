//go:build !race

package kernel

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
