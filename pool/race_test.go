//go:build race

package pool

// raceEnabled is true under -race, which changes allocation counts.
const raceEnabled = true
