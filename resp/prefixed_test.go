package resp

import (
	"bufio"
	"bytes"
	"errors"
	"testing"
)

func TestAppendCommandPrefixed(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		keys   []int
		args   []any
		want   []string
	}{
		{"string key", "p:", []int{1}, []any{"GET", "k"}, []string{"GET", "p:k"}},
		{"bytes and int keys", "p:", []int{1, 3}, []any{"MSET", []byte("a"), 1, 42, 2}, []string{"MSET", "p:a", "1", "p:42", "2"}},
		{"float and bool keys", "t", []int{1, 2}, []any{"X", 1.5, true}, []string{"X", "t1.5", "t1"}},
		{"no keys", "p:", nil, []any{"PING"}, []string{"PING"}},
		{"no prefix", "", []int{1}, []any{"GET", "k"}, []string{"GET", "k"}},
		{"empty key", "p:", []int{1}, []any{"GET", ""}, []string{"GET", "p:"}},
	}
	for _, tt := range tests {
		out, err := AppendCommandPrefixed([]byte("junk"), tt.prefix, tt.keys, tt.args...)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !bytes.HasPrefix(out, []byte("junk")) {
			t.Fatalf("%s: dst not kept", tt.name)
		}
		v, err := NewReader(bufio.NewReader(bytes.NewReader(out[4:])), Limits{}).Read()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		elems, _ := v.Array()
		if len(elems) != len(tt.want) {
			t.Fatalf("%s: %v", tt.name, v)
		}
		for i, e := range elems {
			if s, _ := e.Text(); s != tt.want[i] {
				t.Errorf("%s: arg %d = %q, want %q", tt.name, i, s, tt.want[i])
			}
		}
	}
	if _, err := AppendCommandPrefixed(nil, "p", []int{1}, "GET", nil); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("nil key: %v", err)
	}
	if _, err := AppendCommandPrefixed(nil, "p", []int{1}); !errors.Is(err, ErrEmptyCommand) {
		t.Errorf("empty: %v", err)
	}
}

func BenchmarkAppendCommandPrefixed(b *testing.B) {
	dst := make([]byte, 0, 256)
	keys := []int{1}
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = AppendCommandPrefixed(dst[:0], "tenant:", keys, "SET", "key", "value")
	}
}
