package main

import (
	"context"
	"slices"
	"time"
)

// locker is one lock library in one configuration. acquire waits for the lock the way
// the library does (its own retry or notification, bounded by ctx) and reports ok=false
// when it gave up without an error of its own; release lets the lock go.
//
// A locker is one file: an implementation and an init that calls registerLocker
// (locks_respire.go for Respire's package lock, locks_peers.go for the others).
type locker interface {
	acquire(ctx context.Context, key string) (release func(ctx context.Context) error, ok bool, err error)
	close()
}

// lockerSpec names a locker and how to open it.
type lockerSpec struct {
	name    string
	respire bool
	// primary marks Respire's row in its default configuration, listed first: the
	// scenario's ratio to the best peer is that row's.
	primary bool
	// reference marks a limit row (limits.go), not a library.
	reference bool
	// retry says how the locker waits for a held lock, for the report.
	retry string
	open  func(ctx context.Context, ep endpoint, o lockerOptions) (locker, error)
	// scenarios, when not nil, are the lock scenarios it runs in; nil means every
	// one. A locker that does not wait has no place in the contended one, where it
	// would spin on the held key.
	scenarios []string
}

// takesPart reports whether the locker runs in the lock scenario sc.
func (s lockerSpec) takesPart(sc *scenario) bool {
	return s.scenarios == nil || slices.Contains(s.scenarios, sc.name)
}

// lockerOptions are the harness settings lockers share.
type lockerOptions struct {
	// retry is the interval of lockers that poll for a held lock.
	retry time.Duration
}

// lockTTL is the lease of lockers that take one as an argument; no run holds a lock
// nearly that long.
const lockTTL = 10 * time.Second

var lockerRegistry []lockerSpec

// registerLocker adds a locker; call it from an init function.
func registerLocker(s lockerSpec) { lockerRegistry = append(lockerRegistry, s) }

// lockerSpecs returns the registered lockers, Respire's first (its primary row leading),
// then the peers, then the reference rows, each group in the order it was registered.
func lockerSpecs() []lockerSpec {
	specs := slices.Clone(lockerRegistry)
	rank := func(s lockerSpec) int {
		switch {
		case s.primary:
			return -1
		case s.respire:
			return 0
		case s.reference:
			return 2
		}
		return 1
	}
	slices.SortStableFunc(specs, func(a, b lockerSpec) int { return rank(a) - rank(b) })
	return specs
}
