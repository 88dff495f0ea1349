//go:build race

package respire

const raceEnabled = true
