//go:build race

package cmds

const raceEnabled = true
