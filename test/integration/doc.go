// Package integration holds the tests of the client that go through its exported API
// only and exercise several packages at once against real servers: Cluster routing
// and its faults, transactions across slots, TLS, compatibility with other server
// generations, key prefixes, allocation budgets and benchmarks of the whole client.
// The root package keeps the tests that need its internals.
//
// It has no code of its own besides this comment; everything is in _test.go files.
package integration
