package emulator

import (
	"reflect"
	"testing"
)

// TestCounters checks Count's names and Commands' exact log, and that the emulator's
// own commands (liveness HELLOs, scripts) are not counted.
func TestCounters(t *testing.T) {
	_, e := startPair(t, Redis84)
	c := dialRaw(t, e.Addr())
	cmds := [][]string{
		args("HELLO", "3"),
		args("CLIENT", "ID"),
		args("set", "lock", "v", "NX", "PX", "30000"),
		args("SET", "lock", "v", "IFEQ", "v", "PX", "30000"),
		args("SET", "lock", "v", "PX", "30000"),
		args("SCRIPT", "LOAD", "return 1"),
		args("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"),
		args("DELEX", "lock", "IFEQ", "v"),
		args("DELIFEQ", "lock", "v"),
	}
	for _, cmd := range cmds {
		c.do(cmd...)
	}
	for name, want := range map[string]int64{
		"HELLO": 1, "CLIENT": 1, "CLIENT ID": 1, "SET": 3, "set": 3, "SET NX": 1, "SET IFEQ": 1,
		"SET PX": 3, "SCRIPT LOAD": 1, "EVALSHA": 1, "EVAL": 0, "DELEX": 1, "DELIFEQ": 1, "GET": 0,
	} {
		if got := e.Count(name); got != want {
			t.Errorf("Count(%q) = %d, want %d", name, got, want)
		}
	}
	if got := e.Commands(); !reflect.DeepEqual(got, cmds) {
		t.Errorf("Commands() =\n%q\nwant\n%q", got, cmds)
	}
	e.Reset()
	if got := e.Count("SET"); got != 0 {
		t.Errorf("Count(SET) after Reset = %d", got)
	}
	if got := e.Commands(); len(got) != 0 {
		t.Errorf("Commands() after Reset = %q", got)
	}
}

// TestForceReply checks that a forced reply is written as it is, the command is not
// run, other commands are unaffected, and Reset lifts it.
func TestForceReply(t *testing.T) {
	srv, e := startPair(t, Redis84)
	srv.Do(t, "SET", "lock", "v")
	e.ForceReply("DELEX", "-NOPERM User x has no permissions to run the 'delex' command\r\n")
	e.ForceReply("SET IFEQ", "-ERR boom\r\n")
	c := dialRaw(t, e.Addr())
	if got := c.do("DELEX", "lock", "IFEQ", "v"); got != "-NOPERM User x has no permissions to run the 'delex' command\r\n" {
		t.Errorf("forced DELEX = %q", got)
	}
	if got := c.do("SET", "lock", "v2", "IFEQ", "v"); got != "-ERR boom\r\n" {
		t.Errorf("forced SET IFEQ = %q", got)
	}
	if got := c.do("SET", "other", "x"); got != "+OK\r\n" {
		t.Errorf("plain SET = %q", got)
	}
	if got := srv.Do(t, "GET", "lock"); got != "v" {
		t.Errorf("forced commands ran: lock = %q", got)
	}
	if got := e.Count("DELEX"); got != 1 {
		t.Errorf("a forced command is still counted: Count(DELEX) = %d", got)
	}
	e.Reset()
	if got := c.do("DELEX", "lock", "IFEQ", "v"); got != ":1\r\n" {
		t.Errorf("DELEX after Reset = %q", got)
	}
}

// TestCommandNames checks the names commands are counted and matched by.
func TestCommandNames(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{args("get", "k"), args("GET")},
		{args("client", "kill", "id", "1"), args("CLIENT", "CLIENT KILL")},
		{args("CLIENT"), args("CLIENT")},
		{args("SET", "k", "v", "IFEQ", "NX", "PX", "1"), args("SET", "SET IFEQ", "SET PX")},
		{args("SET", "k", "v", "nx", "get", "NX"), args("SET", "SET NX", "SET GET")},
		{args("SET", "k", "IFEQ"), args("SET")},
	} {
		var in [][]byte
		for _, a := range c.args {
			in = append(in, []byte(a))
		}
		if got := commandNames(in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("commandNames(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
