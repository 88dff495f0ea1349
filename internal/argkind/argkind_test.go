package argkind

import (
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the package starts
// none.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type (
	key   string
	blob  []byte
	octet uint8
	runes []octet
	level int32
	words []string
)

func TestText(t *testing.T) {
	tests := []struct {
		name string
		arg  any
		want string
		ok   bool
	}{
		{"string", "k", "k", true},
		{"empty string", "", "", true},
		{"bytes", []byte("b"), "b", true},
		{"nil bytes", []byte(nil), "", true},
		{"named string", key("nk"), "nk", true},
		{"named bytes", blob("nb"), "nb", true},
		{"raw JSON", json.RawMessage(`[1]`), "[1]", true},
		{"slice of a named byte", runes{'o', 'k'}, "ok", true},
		{"int", 7, "", false},
		{"named int", level(7), "", false},
		{"duration", time.Second, "", false},
		{"float", 1.5, "", false},
		{"bool", true, "", false},
		{"nil", nil, "", false},
		{"strings", []string{"a"}, "", false},
		{"named strings", words{"a"}, "", false},
		{"pointer", new(string), "", false},
	}
	for _, tt := range tests {
		got, ok := Text(tt.arg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: Text(%#v) = %q, %v; want %q, %v", tt.name, tt.arg, got, ok, tt.want, tt.ok)
		}
	}
}

// Text reads a named argument in place: no allocation, and the caller's value stays on
// its stack.
func TestTextAllocs(t *testing.T) {
	k, b, n := key("user:1"), blob("payload"), level(3)
	allocs := testing.AllocsPerRun(100, func() {
		Text(k)
		Text(b)
		Text(n)
		Text("s")
	})
	if allocs != 0 {
		t.Errorf("Text allocates %v times; want 0", allocs)
	}
}

func TestNameIsItsText(t *testing.T) {
	n := &Name{Text: "GET", Entry: 1}
	got, ok := Text(n)
	if !ok || got != "GET" {
		t.Fatalf("Text(&Name{Text: GET}) = %q, %v; want GET, true", got, ok)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = Text(n) }); allocs != 0 {
		t.Fatalf("Text of a *Name allocates %v times", allocs)
	}
}
