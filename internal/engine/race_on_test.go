//go:build race

package engine

// raceEnabled: the race detector multiplies a process's memory, so the
// tests of memory bounds check outcomes, not peak RSS, under it.
const raceEnabled = true
