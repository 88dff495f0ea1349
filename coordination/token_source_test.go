package coordination

import (
	"testing"
	"testing/cryptotest"
	"time"
)

// TestPermitTokensComeFromCryptoRand: semaphore permits and read/write leases draw their
// tokens (and the hash fields named after them) from crypto/rand, which a seeded global
// source makes repeat; fenced locks use lock.NewToken, tested in lock.
func TestPermitTokensComeFromCryptoRand(t *testing.T) {
	draw := func() [3]string {
		cryptotest.SetGlobalRandom(t, 14)
		var got [3]string
		for i, kind := range []string{"p:", "r:", "w:"} {
			e := newEntry(nil, "k", kind, time.Second)
			if e.Token().Len() != 32 || e.field != kind+string(e.Token().Bytes()) {
				t.Fatalf("entry token %q, field %q", e.Token().Bytes(), e.field)
			}
			got[i] = e.field
		}
		return got
	}
	if a, b := draw(), draw(); a != b {
		t.Fatalf("same crypto/rand seed, different permit tokens: %q and %q", a, b)
	}
}

// TestRedlockTokensComeFromCryptoRand: a Redlock draws its owner token from crypto/rand,
// which a seeded global source makes repeat.
func TestRedlockTokensComeFromCryptoRand(t *testing.T) {
	g := &RedlockGroup{nodes: make([]*redlockNode, 3)}
	draw := func() string {
		cryptotest.SetGlobalRandom(t, 14)
		rl := g.newRedlock("k", time.Second)
		if rl.Token().Len() != 32 || len(rl.servers) != 3 {
			t.Fatalf("Redlock token %q, %d servers", rl.Token().Bytes(), len(rl.servers))
		}
		return string(rl.Token().Bytes())
	}
	if a, b := draw(), draw(); a != b {
		t.Fatalf("same crypto/rand seed, different Redlock tokens: %q and %q", a, b)
	}
}
