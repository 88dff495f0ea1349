package lock

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// Token is an owner token: exact bytes, compared byte for byte. It is a comparable value
// (use == or as a map key); the zero Token is empty and rejected by every operation.
type Token struct {
	b string // the bytes, held in a string so the token is immutable and comparable
}

// NewToken returns a fresh random token: 128 bits from crypto/rand, as 32 lower-case
// hexadecimal characters, so that it reads well in redis-cli.
func NewToken() Token {
	var text [tokenTextLen]byte
	return Token{b: string(randomTokenText(&text))}
}

const tokenTextLen = 32

// randomTokenText fills text with 128 random bits in hexadecimal and returns it.
func randomTokenText(text *[tokenTextLen]byte) []byte {
	var raw [tokenTextLen / 2]byte
	rand.Read(raw[:]) // never fails: crypto/rand crashes the program rather than return an error
	hex.Encode(text[:], raw[:])
	return text[:]
}

// TokenFromString returns the token holding the bytes of s.
func TokenFromString(s string) Token { return Token{b: s} }

// TokenFromBytes returns the token holding a copy of b: later changes to b do not change
// the token.
func TokenFromBytes(b []byte) Token { return Token{b: string(b)} }

// Bytes returns a copy of the token's bytes.
func (t Token) Bytes() []byte { return []byte(t.b) }

// Len returns the number of bytes.
func (t Token) Len() int { return len(t.b) }

// IsZero reports whether the token is empty.
func (t Token) IsZero() bool { return t.b == "" }

// String returns the bytes in upper-case hexadecimal: lossless for any token, binary or
// text.
func (t Token) String() string { return strings.ToUpper(hex.EncodeToString([]byte(t.b))) }

// Text returns the token as text, or an error if its bytes are not valid UTF-8 (the
// bytes are never replaced).
func (t Token) Text() (string, error) {
	if !utf8.ValidString(t.b) {
		return "", errInvalidUTF8
	}
	return t.b, nil
}

var errInvalidUTF8 = errors.New("lock: token is not valid UTF-8")
