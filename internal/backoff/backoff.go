// Package backoff spaces retries: a ceiling that doubles with each retry up to a cap,
// and the random share of it that a retry waits, so that many waiters that failed
// together do not retry together.
//
// Package lock's ExponentialRetry waits Full, the subscriptions' reconnections Equal.
//
// # Concurrency
//
// The functions are safe for concurrent use and start no goroutines. Jitter is read on
// every call: only a test sets it, before the code under test runs and not in parallel
// with other tests, and restores it when it ends.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter returns a uniform random duration in [0, n]. It is a variable so that tests,
// in any package of the module, can script it (its least, 0, or its most, n); a test
// that sets it restores it when it ends and must not run in parallel with others.
var Jitter = func(n time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(n) + 1)) }

// Ceiling returns base·2^(n-1) for the n-th retry (n from 1; a smaller n counts as 1),
// capped at max; it never overflows, however large n is.
func Ceiling(base, max time.Duration, n int) time.Duration {
	shift := 0 // a negative one would panic
	if n > 1 {
		shift = n - 1
	}
	if shift < 62 && base <= max>>shift {
		return base << shift
	}
	return max
}

// Full returns a wait in [0, Ceiling] ("full jitter"): the widest spread, for waiters
// that contend with each other (locks).
func Full(base, max time.Duration, n int) time.Duration { return Jitter(Ceiling(base, max, n)) }

// Equal returns a wait in [Ceiling/2, Ceiling] ("equal jitter"): never much shorter
// than the ceiling, for reconnections to a server that may still be down.
func Equal(base, max time.Duration, n int) time.Duration {
	c := Ceiling(base, max, n)
	return c/2 + Jitter(c/2)
}
