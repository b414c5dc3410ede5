//go:build race

package isolate

// raceEnabled reports whether the race detector is on: its shadow memory
// counts against RLIMIT_DATA, so a worker then sets no data limit.
const raceEnabled = true
