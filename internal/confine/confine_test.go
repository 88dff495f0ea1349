package confine

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every connection-state command is refused in either case, CLIENT's with its
// subcommand: the shape filter before the look-up lets each of them through.
func TestConnStateEveryCommand(t *testing.T) {
	for name := range statefulCommands {
		for _, n := range []string{name, strings.ToUpper(name)} {
			if what, hint, bad := ConnState([]any{n, "x"}); !bad || what != strings.ToUpper(name) || hint != statefulCommands[name] {
				t.Errorf("%s: %q, %q, %v; want it refused", n, what, hint, bad)
			}
		}
	}
	for sub := range statefulClientSubcommands {
		if what, hint, bad := ConnState([]any{"Client", strings.ToUpper(sub)}); !bad || what != "CLIENT "+strings.ToUpper(sub) || hint != statefulClientSubcommands[sub] {
			t.Errorf("CLIENT %s: %q, %q, %v; want it refused", sub, what, hint, bad)
		}
	}
	for _, args := range [][]any{{"GET", "k"}, {"SET", "k", "v"}, {"CLIENT", "LIST"}, {"HSET", "h", "f", "v"}} {
		if what, hint, bad := ConnState(args); bad {
			t.Errorf("%v: refused as %q, %q", args, what, hint)
		}
	}
}

// The commands a key prefix cannot confine are refused under one, CLUSTER's by its
// subcommand in either case; the others pass.
// subcommand is a named string type, which the client sends as its text.
type subcommand string

func TestUnconfinable(t *testing.T) {
	for _, tc := range []struct {
		args []any
		what string
	}{
		{[]any{"RANDOMKEY"}, "RANDOMKEY"},
		{[]any{"debug", "object", "k"}, "DEBUG"},
		{[]any{"CLUSTER", "GetKeysInSlot", 0, 10}, "CLUSTER GETKEYSINSLOT"},
		{[]any{"cluster", []byte("getkeysinslot"), 0, 10}, "CLUSTER GETKEYSINSLOT"},
		{[]any{"cluster", subcommand("GETKEYSINSLOT"), 0, 10}, "CLUSTER GETKEYSINSLOT"},
		{[]any{"CLUSTER", "INFO"}, ""},
		{[]any{"CLUSTER"}, ""},
		{[]any{"GET", "k"}, ""},
	} {
		name := []byte(strings.ToLower(tc.args[0].(string)))
		what, why, bad := Unconfinable(name, tc.args)
		if what != tc.what || bad != (tc.what != "") || bad != (why != "") {
			t.Errorf("%v: %q, %q, %v; want %q", tc.args, what, why, bad, tc.what)
		}
	}
}
