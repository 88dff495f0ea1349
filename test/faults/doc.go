// Package faults holds the fault scenarios of issue 14 as tests: each drives
// the client's public API (respire, lock, coordination) while a fault is
// injected (test/faultproxy for the network, test/testserver for processes),
// records a history (test/history) and asserts the checkers find no violation.
//
// Every scenario is seeded and prints its seed; RESPIRE_SEED replays one.
// `make test` runs each bounded; RESPIRE_SOAK=1 (`make soak`) runs them long.
// The only non-test code here is what every scenario shares: [Seed] and
// [Soak].
//
// # Concurrency
//
// The helpers are safe for concurrent use and start no goroutines.
package faults
