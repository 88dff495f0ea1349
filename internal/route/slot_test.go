package route

import (
	"testing"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/command"
)

// SlotOf takes a short cut for a command whose only key is its first argument, and
// evaluates the key specifications of the others: both agree with the slot of the key
// as the server reads it, with and without a key prefix.
func TestSlotOfKeys(t *testing.T) {
	cases := []struct {
		args     []any
		key      string // "" for a command of no slot
		shortcut bool   // its only key is its first argument
	}{
		{[]any{"GET", "user:1"}, "user:1", true},
		{[]any{"get", []byte("{t}:a")}, "{t}:a", true},
		{[]any{"SET", "k", "v", "PX", 100, "GET"}, "k", true},
		{[]any{"HGET", "h", "f"}, "h", true},
		{[]any{"INCR", 42}, "42", true},
		{[]any{"ZADD", "z", 1.5, "m"}, "z", true},
		{[]any{"GET"}, "", true}, // refused by the server; no key to route by
		{[]any{"MGET", "{a}1", "{a}2"}, "{a}1", false},
		{[]any{"LMOVE", "{l}a", "{l}b", "LEFT", "RIGHT"}, "{l}a", false},
		{[]any{"OBJECT", "ENCODING", "k"}, "k", false},
		{[]any{"EVAL", "return 1", 1, "e"}, "e", false},
		{[]any{"XREAD", "STREAMS", "s", "0"}, "s", false},
		{[]any{"SORT", "l", "STORE", "l"}, "l", false},
	}
	for _, c := range cases {
		info, ok := command.LookupArgs(c.args)
		if !ok {
			t.Fatalf("%v: not in the table", c.args)
		}
		if got := info.OneKeyFirst(); got != c.shortcut {
			t.Errorf("%v: OneKeyFirst = %v, want %v", c.args, got, c.shortcut)
		}
		for _, prefix := range []string{"", "app:"} {
			var prefixed []int
			if prefix != "" {
				prefixed = command.InfoPrefixableKeyIndexes(info, c.args, nil)
			}
			want := AnySlot
			if c.key != "" {
				want = cluster.Slot(prefix + c.key)
			}
			got, err := SlotOf(info, c.args, prefix, prefixed)
			if err != nil || got != want {
				t.Errorf("SlotOf(%v) under prefix %q = %d, %v; want %d", c.args, prefix, got, err, want)
			}
		}
	}
}
