//go:build !race

package testkit

// Race reports whether the race detector is on: allocation budgets are checked only
// without it, since it allocates on its own.
const Race = false
