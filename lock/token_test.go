package lock

import (
	"errors"
	"strings"
	"testing"
)

func TestToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || a.IsZero() || a.Len() != 32 {
		t.Fatalf("NewToken: %q %q", a.b, b.b)
	}
	if s, err := a.Text(); err != nil || len(s) != 32 {
		t.Fatalf("random token text %q %v", s, err)
	}
	raw := []byte{0, 0xff, 'a', 0xc3}
	tok := TokenFromBytes(raw)
	raw[0] = 9 // the token keeps its own copy
	if tok.Bytes()[0] != 0 || tok.String() != "00FF61C3" {
		t.Fatalf("binary token %v %s", tok.Bytes(), tok)
	}
	if _, err := tok.Text(); !errors.Is(err, errInvalidUTF8) {
		t.Fatalf("Text of invalid UTF-8: %v", err)
	}
	got := tok.Bytes()
	got[1] = 0 // Bytes is a copy too
	if tok.Bytes()[1] != 0xff {
		t.Fatal("Bytes shares memory with the token")
	}
	if TokenFromString("owner-42") != TokenFromBytes([]byte("owner-42")) {
		t.Fatal("equal bytes, unequal tokens")
	}
	if TokenFromString("a") == TokenFromString("A") {
		t.Fatal("tokens compare case-insensitively")
	}
	m := map[Token]int{TokenFromString("x"): 1}
	if m[TokenFromBytes([]byte("x"))] != 1 {
		t.Fatal("token not usable as a map key")
	}
	if !(Token{}).IsZero() || (Token{}).String() != "" || !strings.EqualFold(TokenFromString("\x01").String(), "01") {
		t.Fatal("zero token")
	}
}
