package lock

import (
	"encoding/hex"
	"testing"
	"testing/cryptotest"
)

// TestTokensComeFromCryptoRand replaces crypto/rand's global source with a seeded one:
// tokens drawn after the same seed are the same, which they would not be from any other
// source. Tokens are 128 bits and, from the real source, all distinct.
func TestTokensComeFromCryptoRand(t *testing.T) {
	t.Run("seeded crypto/rand decides", func(t *testing.T) {
		draw := func() [4]string {
			cryptotest.SetGlobalRandom(t, 14)
			var m Lock
			text := randomTokenText(&m.tokenText)
			return [4]string{NewToken().b, NewToken().b, string(text), NewToken().b}
		}
		a, b := draw(), draw()
		if a != b {
			t.Fatalf("same crypto/rand seed, different tokens: %q and %q", a, b)
		}
	})
	t.Run("128 bits, distinct", func(t *testing.T) {
		const n = 100000
		seen := make(map[Token]bool, n)
		for range n {
			tok := NewToken()
			raw, err := hex.DecodeString(tok.b)
			if err != nil || len(raw) != 16 {
				t.Fatalf("token %q is not 16 bytes in hexadecimal (%v)", tok.b, err)
			}
			if seen[tok] {
				t.Fatalf("token %q drawn twice", tok.b)
			}
			seen[tok] = true
		}
	})
}
