//go:build race

package conn

// raceEnabled is true under -race, which changes allocation counts.
const raceEnabled = true
