package resp

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// classifyCase is one error reply and what the classifiers must say of it.
type classifyCase struct {
	server string // where the bytes were recorded
	wire   string // the exact reply
	cmd    string // IsUnknownCommand is true for this name only ("" for none)
	sub    string // IsUnknownSubcommand is true for this "CONTAINER SUB" only ("" for none)
	class  string // "syntax", "cluster-disabled", "noscript", "no-such-client", "loading" or ""
}

// classifyCases are every row of SERVER-REPLIES.md's "Error shapes across server
// generations", each server's bytes as recorded, plus the unknown-command rows of the
// main table and look-alikes that must not be classified.
var classifyCases = []classifyCase{
	// DELEX k IFEQ v
	{"redis-6.0.16", "-ERR unknown command `DELEX`, with args beginning with: `k`, `IFEQ`, `v`, \r\n", "DELEX", "", ""},
	{"redis-7.0.15", "-ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v' \r\n", "DELEX", "", ""},
	{"valkey-8.1.1", "-ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v' \r\n", "DELEX", "", ""},
	{"valkey-9.1.2", "-ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v' \r\n", "DELEX", "", ""},
	// DELIFEQ k v
	{"redis-6.0.16", "-ERR unknown command `DELIFEQ`, with args beginning with: `k`, `v`, \r\n", "DELIFEQ", "", ""},
	{"redis-7.0.15", "-ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'v' \r\n", "DELIFEQ", "", ""},
	{"redis-8.6.3", "-ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'v' \r\n", "DELIFEQ", "", ""},
	{"valkey-8.1.1", "-ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'v' \r\n", "DELIFEQ", "", ""},
	// FOOBAR (no args)
	{"redis-6.0.16", "-ERR unknown command `FOOBAR`, with args beginning with: \r\n", "FOOBAR", "", ""},
	{"redis-7.0.15", "-ERR unknown command 'FOOBAR', with args beginning with: \r\n", "FOOBAR", "", ""},
	{"redis-8.6.3", "-ERR unknown command 'FOOBAR'\r\n", "FOOBAR", "", ""},
	{"valkey-8.1.1", "-ERR unknown command 'FOOBAR', with args beginning with: \r\n", "FOOBAR", "", ""},
	{"valkey-9.1.2", "-ERR unknown command 'FOOBAR', with args beginning with: \r\n", "FOOBAR", "", ""},
	// FOOBAR a
	{"redis-6.0.16", "-ERR unknown command `FOOBAR`, with args beginning with: `a`, \r\n", "FOOBAR", "", ""},
	{"redis-7.0.15+", "-ERR unknown command 'FOOBAR', with args beginning with: 'a' \r\n", "FOOBAR", "", ""},
	// DELEX with no key (main table), a name as long as COMMAND names get, an argument
	// that looks like the end of the name.
	{"redis-7.0.15", "-ERR unknown command 'DELEX', with args beginning with: \r\n", "DELEX", "", ""},
	{"redis-7.0.15", "-ERR unknown command 'CLUSTER|COUNT-FAILURE-REPORTS', with args beginning with: \r\n", "CLUSTER|COUNT-FAILURE-REPORTS", "", ""},
	{"redis-7.0.15", "-ERR unknown command 'X', with args beginning with: 'Y', with args beginning with: \r\n", "X", "", ""},
	{"redis-6.0.16", "-ERR unknown command `A`B`, with args beginning with: \r\n", "A`B", "", ""},
	// CLIENT FOOBAR
	{"redis-6.0.16", "-ERR Unknown subcommand or wrong number of arguments for 'FOOBAR'. Try CLIENT HELP\r\n", "", "CLIENT FOOBAR", ""},
	{"redis-7.0.15+", "-ERR unknown subcommand 'FOOBAR'. Try CLIENT HELP.\r\n", "", "CLIENT FOOBAR", ""},
	// OBJECT FOOBAR k
	{"redis-6.0.16", "-ERR Unknown subcommand or wrong number of arguments for 'FOOBAR'. Try OBJECT HELP.\r\n", "", "OBJECT FOOBAR", ""},
	{"redis-7.0.15+", "-ERR unknown subcommand 'FOOBAR'. Try OBJECT HELP.\r\n", "", "OBJECT FOOBAR", ""},
	// CLIENT NO-EVICT on
	{"redis-6.0.16", "-ERR Unknown subcommand or wrong number of arguments for 'NO-EVICT'. Try CLIENT HELP\r\n", "", "CLIENT NO-EVICT", ""},
	// CLUSTER SHARDS on a Redis 6 Cluster node (issue 10) and its Redis 7 wording.
	{"redis-6.0.16", "-ERR Unknown subcommand or wrong number of arguments for 'SHARDS'. Try CLUSTER HELP.\r\n", "", "CLUSTER SHARDS", ""},
	{"redis-7.0.15", "-ERR unknown subcommand 'shards'. Try CLUSTER HELP.\r\n", "", "CLUSTER SHARDS", ""},
	// SET k v IFEQ v PX 1000
	{"redis-6.0.16, 7.0.15", "-ERR syntax error\r\n", "", "", "syntax"},
	// CLUSTER SHARDS (standalone)
	{"all", "-ERR This instance has cluster support disabled\r\n", "", "", "cluster-disabled"},
	// EVALSHA <unknown sha> 0
	{"redis-6.0.16, 7.0.15, 8.6.3", "-NOSCRIPT No matching script. Please use EVAL.\r\n", "", "", "noscript"},
	{"valkey-8.1.1, 9.1.2", "-NOSCRIPT No matching script.\r\n", "", "", "noscript"},
	// CLIENT KILL of a gone connection, old form
	{"all", "-ERR No such client\r\n", "", "", "no-such-client"},
	// Any command while a restarted server loads its RDB or AOF.
	{"redis-6.0.16+, valkey", "-LOADING Redis is loading the dataset in memory\r\n", "", "", "loading"},

	// Look-alikes, classified as nothing.
	{"all", "-ERR wrong number of arguments for 'get' command\r\n", "", "", ""},
	{"all", "-NOPROTO unsupported protocol version\r\n", "", "", ""},
	{"redis-7.0.15", "-ERR Unknown Redis command called from script\r\n", "", "", ""},
	{"valkey-8.1.1", "-ERR Unknown command called from script script: c66ee106c9c40570ea2b35976bd2419e569f798b, on @user_script:1.\r\n", "", "", ""},
	{"redis-7.0.15", "-ERR Error in ACL SETUSER modifier '+delex': Unknown command or category name in ACL\r\n", "", "", ""},
	{"redis-8.6.3", "-NOPERM User lim has no permissions to run the 'delex' command\r\n", "", "", ""},
	{"redis-7.0.15", "-NOPERM this user has no permissions to run the 'client|kill' command\r\n", "", "", ""},
	{"redis-8.6.3", "-ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE\r\n", "", "", ""},
	{"redis-8.6.3", "-ERR wrong number of arguments for 'delex' command\r\n", "", "", ""},
	{"redis-7.0.15", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "", "", ""},
	{"made up", "-ERR syntax error near x\r\n", "", "", ""},
	{"made up", "-ERR unknown command\r\n", "", "", ""},
	{"made up", "-ERR unknown command \"DELEX\"\r\n", "", "", ""},
	{"made up", "-ERR unknown command 'DELEX\r\n", "", "", ""},
	{"made up", "-ERR unknown subcommand 'X'\r\n", "", "", ""},
	{"made up", "-ERR unknown subcommand 'X'. Try HELP.\r\n", "", "", ""},
	{"made up", "-ERR unknown subcommand X. Try CLIENT HELP.\r\n", "", "", ""},
	{"made up", "-ERR This instance has cluster support disabled.\r\n", "", "", ""},
	{"made up", "-NOSCRIPTS x\r\n", "", "", ""},
	{"made up", "-ERR LOADING Redis is loading the dataset in memory\r\n", "", "", ""},
	{"made up", "-LOADINGX x\r\n", "", "", ""},
}

// readServerError decodes wire as a reply and returns its error.
func readServerError(t *testing.T, wire string) error {
	t.Helper()
	v, err := NewReader(bufio.NewReader(strings.NewReader(wire)), Limits{}).Read()
	if err != nil || v.Kind() != KindError {
		t.Fatalf("%q does not decode as an error: %v, %v", wire, v, err)
	}
	return v.Err()
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		err := readServerError(t, tc.wire)
		for _, e := range []error{err, fmt.Errorf("respire: %w", err), errors.Join(errors.New("other"), err)} {
			check := func(what string, got, want bool) {
				if got != want {
					t.Errorf("%s %q (as %T): %s = %v, want %v", tc.server, tc.wire, e, what, got, want)
				}
			}
			for _, name := range []string{"DELEX", "DELIFEQ", "FOOBAR", "HELLO", "X", "A`B", "CLUSTER|COUNT-FAILURE-REPORTS"} {
				check("IsUnknownCommand "+name, IsUnknownCommand(e, name), strings.EqualFold(name, tc.cmd))
				check("IsUnknownCommand "+strings.ToLower(name), IsUnknownCommand(e, strings.ToLower(name)), strings.EqualFold(name, tc.cmd))
			}
			for _, cs := range []string{"CLIENT FOOBAR", "OBJECT FOOBAR", "CLIENT NO-EVICT", "CLUSTER SHARDS", "CLUSTER FOOBAR"} {
				c, s, _ := strings.Cut(cs, " ")
				check("IsUnknownSubcommand "+cs, IsUnknownSubcommand(e, c, s), cs == tc.sub)
				check("IsUnknownSubcommand lower "+cs, IsUnknownSubcommand(e, strings.ToLower(c), strings.ToLower(s)), cs == tc.sub)
			}
			check("IsSyntaxError", IsSyntaxError(e), tc.class == "syntax")
			check("IsClusterDisabled", IsClusterDisabled(e), tc.class == "cluster-disabled")
			check("IsNoScript", IsNoScript(e), tc.class == "noscript")
			check("IsNoSuchClient", IsNoSuchClient(e), tc.class == "no-such-client")
			check("IsLoading", IsLoading(e), tc.class == "loading")
		}
		// The text alone, not a *ServerError, is never classified.
		plain := errors.New(err.Error())
		if IsUnknownCommand(plain, tc.cmd) || IsSyntaxError(plain) || IsClusterDisabled(plain) || IsNoScript(plain) || IsNoSuchClient(plain) || IsLoading(plain) {
			t.Errorf("%q: a plain error with the server's text is classified", tc.wire)
		}
	}
	if IsUnknownCommand(nil, "") || IsUnknownSubcommand(nil, "", "") || IsSyntaxError(nil) || IsClusterDisabled(nil) || IsNoScript(nil) || IsNoSuchClient(nil) || IsLoading(nil) {
		t.Error("nil is classified")
	}
}

// AsServerError finds an error reply however it is wrapped, and nothing else: not a
// plain error with an error reply's text, not a protocol error.
func TestAsServerError(t *testing.T) {
	reply := NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value")
	for _, tc := range []struct {
		name string
		err  error
		want *ServerError
	}{
		{"nil", nil, nil},
		{"the reply", reply, reply},
		{"wrapped", fmt.Errorf("respire: command 1: %w", reply), reply},
		{"joined", errors.Join(errors.New("other"), reply), reply},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", reply)), reply},
		{"the text alone", errors.New(reply.Error()), nil},
		{"protocol error", &ProtocolError{Reason: "bad"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AsServerError(tc.err)
			if got != tc.want || ok != (tc.want != nil) {
				t.Errorf("AsServerError = %v, %v; want %v, %v", got, ok, tc.want, tc.want != nil)
			}
		})
	}
}

// AsServerError costs nothing for nil and for an unwrapped reply, the errors it is
// asked about after nearly every command.
func TestAsServerErrorAllocs(t *testing.T) {
	reply := error(NewServerError("ERR x"))
	for _, tc := range []struct {
		name string
		err  error
	}{{"nil", nil}, {"the reply", reply}} {
		if n := testing.AllocsPerRun(100, func() { AsServerError(tc.err) }); n != 0 {
			t.Errorf("AsServerError(%s): %v allocations, want 0", tc.name, n)
		}
	}
}

// The unknown-command forms of each generation, rendered as the servers render them
// for any name and arguments, parse back to the name.
func TestUnknownCommandForms(t *testing.T) {
	names := []string{"DELEX", "x", "MY.MODULE-CMD", "a'b", "a`b", "with args", ""}
	argLists := [][]string{nil, {"k"}, {"k", "IFEQ", "v"}, {"'", "`", ", with args beginning with:"}}
	for _, name := range names {
		for _, args := range argLists {
			for _, msg := range unknownCommandForms(name, args) {
				got, ok := UnknownCommand(msg)
				if !ok || got != name {
					t.Errorf("UnknownCommand(%q) = %q, %v; want %q", msg, got, ok, name)
				}
			}
		}
	}
}

// unknownCommandForms renders the unknown-command error of name and args the way Redis
// 6.x, Redis 7.0+/Valkey and Redis 8.6 (no arguments) do.
func unknownCommandForms(name string, args []string) []string {
	var r6, r7 strings.Builder
	r6.WriteString("ERR unknown command `" + name + "`, with args beginning with: ")
	r7.WriteString("ERR unknown command '" + name + "', with args beginning with: ")
	for _, a := range args {
		r6.WriteString("`" + a + "`, ")
		r7.WriteString("'" + a + "' ")
	}
	forms := []string{r6.String(), r7.String()}
	if len(args) == 0 {
		forms = append(forms, "ERR unknown command '"+name+"'")
	}
	return forms
}

func TestUnknownSubcommandForms(t *testing.T) {
	for _, sub := range []string{"SHARDS", "no-evict", "a'b", "'. Try X HELP", ""} {
		for _, msg := range []string{
			"ERR unknown subcommand '" + sub + "'. Try CLUSTER HELP.",
			"ERR Unknown subcommand or wrong number of arguments for '" + sub + "'. Try CLUSTER HELP.",
			"ERR Unknown subcommand or wrong number of arguments for '" + sub + "'. Try CLUSTER HELP",
		} {
			c, s, ok := UnknownSubcommand(msg)
			if !ok || c != "CLUSTER" || s != sub {
				t.Errorf("UnknownSubcommand(%q) = %q, %q, %v", msg, c, s, ok)
			}
		}
	}
}

// FuzzClassify: the parsers never panic, what they find is a part of the message, and a
// name found renders back, in every generation's form, to a message naming it again.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(strings.TrimSuffix(tc.wire[1:], "\r\n"))
	}
	f.Fuzz(func(t *testing.T, msg string) {
		if name, ok := UnknownCommand(msg); ok {
			if !strings.Contains(msg, name) {
				t.Fatalf("UnknownCommand(%q) = %q, not part of the message", msg, name)
			}
			if !IsUnknownCommand(NewServerError(msg), name) {
				t.Fatalf("IsUnknownCommand(%q, %q) = false though UnknownCommand finds it", msg, name)
			}
			if !strings.ContainsAny(name, "'`") && !strings.Contains(name, unknownCommandArgs) {
				for _, form := range unknownCommandForms(name, []string{"a"}) {
					if got, ok := UnknownCommand(form); !ok || got != name {
						t.Fatalf("%q renders as %q, which parses as %q, %v", name, form, got, ok)
					}
				}
			}
		}
		// LOADING is matched by its code alone: the first word, whatever follows.
		code, _, _ := strings.Cut(msg, " ")
		if got, want := IsLoading(NewServerError(msg)), code == "LOADING"; got != want {
			t.Fatalf("IsLoading(%q) = %v, want %v", msg, got, want)
		}
		if c, s, ok := UnknownSubcommand(msg); ok {
			if !strings.Contains(msg, "'"+s+"'. Try "+c+" HELP") {
				t.Fatalf("UnknownSubcommand(%q) = %q, %q, not as the message says", msg, c, s)
			}
			if !IsUnknownSubcommand(NewServerError(msg), c, s) {
				t.Fatalf("IsUnknownSubcommand(%q, %q, %q) = false", msg, c, s)
			}
		}
	})
}
