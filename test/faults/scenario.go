package faults

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// Soak reports whether the long versions of the scenarios were asked for
// (RESPIRE_SOAK=1, as `make soak` sets).
func Soak() bool { return os.Getenv("RESPIRE_SOAK") == "1" }

// Seed returns the scenario's random source and its seed, logged so a failure
// can be replayed: RESPIRE_SEED=<seed> reuses it, otherwise the seed is the
// current time. The source is for the scenario's own choices (which fault,
// when); it is not safe for concurrent use.
func Seed(t testing.TB) (*rand.Rand, uint64) {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RESPIRE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("RESPIRE_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with RESPIRE_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed
}

// Budget returns the scenario's length: short under `make test`, long under
// RESPIRE_SOAK=1, or RESPIRE_SOAK_DURATION when set with the soak.
func Budget(short, long time.Duration) time.Duration {
	if !Soak() {
		return short
	}
	if d, err := time.ParseDuration(os.Getenv("RESPIRE_SOAK_DURATION")); err == nil && d > 0 {
		return d
	}
	return long
}
