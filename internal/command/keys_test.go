package command

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/internal/command/spec"
)

// words splits a command line on spaces; a word of two single quotes stands for an
// empty argument.
func words(line string) []any {
	var args []any
	for _, w := range strings.Fields(line) {
		if w == "''" {
			w = ""
		}
		args = append(args, w)
	}
	return args
}

type keyCase struct {
	args []any
	want []int // KeyIndexes
}

func line(s string, want ...int) keyCase { return keyCase{args: words(s), want: want} }

var keyCases = []keyCase{
	// Single keys and plain ranges.
	line("GET k", 1),
	line("get k", 1),
	line("GeT k", 1),
	line("SET k v", 1),
	line("SET k v NX PX 100 GET", 1),
	line("APPEND k v", 1),
	line("MGET a b c", 1, 2, 3),
	line("MSET k1 v1 k2 v2", 1, 3),
	line("MSET k1 v1 k2 v2 k3 v3", 1, 3, 5),
	line("MSETNX k1 v1 k2 v2", 1, 3),
	line("DEL a", 1),
	line("DEL a b c", 1, 2, 3),
	line("UNLINK a b", 1, 2),
	line("EXISTS a a", 1, 2),
	line("RENAME a b", 1, 2),
	line("RENAMENX a b", 1, 2),
	line("SMOVE src dst m", 1, 2),
	line("LMOVE src dst LEFT RIGHT", 1, 2),
	line("BLMOVE src dst LEFT RIGHT 0", 1, 2),
	line("RPOPLPUSH a b", 1, 2),
	line("BRPOPLPUSH a b 0", 1, 2),
	line("COPY a b DB 1 REPLACE", 1, 2),
	line("LCS a b LEN", 1, 2),
	line("BLPOP k1 k2 0", 1, 2),
	line("BLPOP k1 0", 1),
	line("BRPOP k1 k2 k3 1.5", 1, 2, 3),
	line("BZPOPMIN z1 z2 0", 1, 2),
	line("BZPOPMAX z1 0", 1),
	line("PFCOUNT a b", 1, 2),
	line("PFMERGE dst a b", 1, 2, 3),
	line("PFMERGE dst", 1),
	line("BITOP AND dst a b", 2, 3, 4),
	line("BITOP NOT dst a", 2, 3),
	line("SINTERSTORE dst a b", 1, 2, 3),
	line("SUNION a b", 1, 2),
	line("WATCH a b", 1, 2),
	line("TOUCH a", 1),
	line("HSET h f v f2 v2", 1),
	line("ZRANGESTORE dst src 0 -1", 1, 2),
	line("GEOSEARCHSTORE dst src FROMMEMBER m BYRADIUS 1 km", 1, 2),
	line("OBJECT ENCODING k", 2),
	line("object encoding k", 2),
	line("OBJECT FREQ k", 2),
	line("XINFO STREAM k", 2),
	line("XINFO STREAM k FULL COUNT 10", 2),
	line("XINFO GROUPS k", 2),
	line("XINFO CONSUMERS k g", 2),
	line("XGROUP CREATE k g $ MKSTREAM", 2),
	line("MEMORY USAGE k", 2),
	line("MEMORY USAGE k SAMPLES 5", 2),
	line("XADD s * f v", 1),
	line("XRANGE s - +", 1),

	// numkeys.
	line("EVAL script 2 k1 k2 a1 a2", 3, 4),
	line("EVAL script 0 a1", nil...),
	line("EVAL script 0", nil...),
	line("EVALSHA sha 1 k1", 3),
	line("EVAL_RO script 1 k1 a", 3),
	line("FCALL f 2 k1 k2 a", 3, 4),
	line("FCALL_RO f 1 k1", 3),
	line("ZUNIONSTORE dst 2 a b WEIGHTS 1 2", 1, 3, 4),
	line("ZINTERSTORE dst 2 a b", 1, 3, 4),
	line("ZDIFFSTORE dst 1 a", 1, 3),
	line("ZUNION 2 a b WITHSCORES", 2, 3),
	line("ZINTER 1 a", 2),
	line("ZDIFF 3 a b c", 2, 3, 4),
	line("ZINTERCARD 2 a b LIMIT 5", 2, 3),
	line("SINTERCARD 2 a b", 2, 3),
	line("SINTERCARD 1 a LIMIT 3", 2),
	line("LMPOP 2 a b LEFT COUNT 3", 2, 3),
	line("ZMPOP 1 z MIN", 2),
	line("BLMPOP 0 2 a b RIGHT", 3, 4),
	line("BZMPOP 1.5 1 z MAX COUNT 2", 3),

	// Keywords.
	line("XREAD STREAMS k1 k2 0 0", 2, 3),
	line("XREAD COUNT 10 BLOCK 0 STREAMS k1 0", 6),
	line("XREAD streams k1 k2 k3 0 0 0", 2, 3, 4),
	line("XREAD STREAMS streams streams 0 0", 2, 3),
	line("XREADGROUP GROUP g c STREAMS k1 k2 > >", 5, 6),
	line("XREADGROUP GROUP streams c COUNT 1 NOACK STREAMS k >", 8),
	line("XREADGROUP GROUP g c BLOCK 100 STREAMS k1 >", 7),
	line("XREADGROUP COUNT 1 GROUP g c STREAMS k >", 7),
	line("XREADGROUP COUNT 1 GROUP streams c STREAMS k >", 7), // the spec would say c, STREAMS
	line("XREADGROUP BLOCK 0 GROUP g streams STREAMS k1 k2 > >", 7, 8),
	line("XREADGROUP NOACK GROUP g c STREAMS k >", 6),
	line("SORT k", 1),
	line("SORT k STORE dst", 1, 3),
	line("SORT k BY w_* GET # GET o_* LIMIT 0 10 DESC ALPHA STORE dst", 1, 14),
	line("sort k store dst", 1, 3),
	line("SORT k BY store GET store", 1),
	line("SORT k LIMIT 0 1 STORE a STORE b", 1, 8),
	line("SORT k STORE get STORE d2", 1, 5),
	line("SORT k STORE", 1),
	line("SORT_RO k BY w_* GET # ALPHA", 1),
	line("SORT_RO k STORE dst", 1),
	line("MIGRATE host 6379 key 0 5000", 3),
	line("MIGRATE host 6379 key 0 5000 COPY REPLACE", 3),
	line("MIGRATE host 6379 '' 0 5000 KEYS k1 k2", 7, 8),
	line("MIGRATE host 6379 '' 0 5000 COPY AUTH keys KEYS k1", 10),
	line("MIGRATE host 6379 '' 0 5000 AUTH2 keys keys KEYS a b c", 10, 11, 12),
	line("MIGRATE host 6379 key 0 5000 KEYS k1", nil...), // refused by the server
	line("GEORADIUS g 0 0 10 km", 1),
	line("GEORADIUS g 0 0 10 km STORE dst", 1, 7),
	line("GEORADIUS g 0 0 10 km WITHDIST STOREDIST dst", 1, 8),
	line("GEORADIUS g 0 0 10 km STORE a STOREDIST b", 1, 7, 9),
	line("GEORADIUSBYMEMBER g m 10 km STORE dst", 1, 6),
	line("GEORADIUS_RO g 0 0 10 km", 1),

	// No keys.
	line("PING"),
	line("KEYS *"),
	line("SCAN 0 MATCH * COUNT 10"),
	line("SUBSCRIBE a b"),
	line("PSUBSCRIBE a*"),
	line("PUBLISH ch msg"),
	line("INFO"),
	line("CONFIG GET maxmemory"),
	line("XINFO HELP"),
	line("OBJECT"),
	line("MULTI"),
	line("FLUSHALL"),

	// Shard channels are hashed like keys.
	line("SPUBLISH ch msg", 1),
	line("SSUBSCRIBE a b", 1, 2),
	line("SUNSUBSCRIBE a", 1),
	line("SUNSUBSCRIBE"),

	// Unknown commands and malformed input.
	line("NOSUCHCOMMAND a b"),
	line("OBJECT NOSUCH k"),
	line("GET"),
	line("MSET"),
	line("MSET k1", 1),
	line("BLPOP k1", nil...),
	line("EVAL"),
	line("EVAL s"),
	line("EVAL s 1"),
	line("EVAL s 3 a b"),
	line("EVAL s -1 a"),
	line("EVAL s x a"),
	line("EVAL s 01 a"),
	line("EVAL s +1 a"),
	line("EVAL s 1a a"),
	line("EVAL s 99999999999999999999999 a"),
	line("EVAL s -9223372036854775808 a"),
	line("ZUNIONSTORE dst 5 a", 1),
	line("ZUNIONSTORE dst", 1),
	line("ZUNIONSTORE"),
	line("XREAD"),
	line("XREAD STREAMS"),
	line("XREAD COUNT 1 STREAMS"),
	line("XREAD STREAMS k1 k2 0"),
	line("XREAD FOO STREAMS k 0"),
	line("XREAD GROUP g c STREAMS k 0"),
	line("XREAD BLOCK STREAMS k 0"),
	line("XREAD COUNT STREAMS k 0"),
	line("XREADGROUP GROUP g"),
	line("BLMPOP 0"),
	line("BLMPOP 0 2 a", nil...),
	line("OBJECT ENCODING"),
	line("XINFO STREAM"),
	line("MIGRATE"),
	line("MIGRATE h"),
	line("MIGRATE h p k", 3),
	line("SORT"),
	line("SORT_RO"),
	line("BITOP AND", nil...),
	line("GEORADIUS g 0 0 10 km STORE", 1),
}

func TestKeyIndexes(t *testing.T) {
	for _, c := range keyCases {
		got := KeyIndexes(c.args, nil)
		if !slices.Equal(got, c.want) {
			t.Errorf("KeyIndexes(%q) = %v, want %v", c.args, got, c.want)
		}
		// The same answer with []byte arguments.
		b := make([]any, len(c.args))
		for i, a := range c.args {
			b[i] = []byte(a.(string))
		}
		if got := KeyIndexes(b, nil); !slices.Equal(got, c.want) {
			t.Errorf("KeyIndexes(%q as []byte) = %v, want %v", c.args, got, c.want)
		}
		// dst is appended to, never overwritten.
		pre := []int{-7, -8}
		got = KeyIndexes(c.args, pre)
		if !slices.Equal(got[:2], []int{-7, -8}) || !slices.Equal(got[2:], c.want) {
			t.Errorf("KeyIndexes(%q, [-7 -8]) = %v, want prefix kept and %v", c.args, got, c.want)
		}
	}
}

func TestKeyIndexesTypedArgs(t *testing.T) {
	cases := []keyCase{
		{[]any{"EVAL", "s", 2, "k1", "k2", "a"}, []int{3, 4}},
		{[]any{"EVAL", "s", int64(1), "k1"}, []int{3}},
		{[]any{"EVAL", "s", int8(1), "k1"}, []int{3}},
		{[]any{"EVAL", "s", uint(1), "k1"}, []int{3}},
		{[]any{"EVAL", "s", uint64(1 << 63), "k1"}, nil},
		{[]any{"EVAL", "s", -1, "k1"}, nil},
		{[]any{"EVAL", "s", 1 << 40, "k1"}, nil},
		{[]any{"EVAL", "s", 2.0, "k1", "k2"}, []int{3, 4}},
		{[]any{"EVAL", "s", 1.5, "k1", "k2"}, nil},
		{[]any{"EVAL", "s", float32(1), "k1"}, []int{3}},
		{[]any{"EVAL", "s", true, "k1"}, []int{3}},
		{[]any{"EVAL", "s", false, "k1"}, nil},
		{[]any{"EVAL", "s", nil, "k1"}, nil},
		{[]any{"ZUNIONSTORE", "d", 2, "a", "b", "WEIGHTS", 1, 2}, []int{1, 3, 4}},
		{[]any{"BLMPOP", 0, 2, "a", "b", "LEFT"}, []int{3, 4}},
		{[]any{"BLMPOP", 1.5, uint16(1), []byte("a"), "LEFT"}, []int{3}},
		{[]any{"XREAD", "COUNT", 5, "BLOCK", 0, []byte("streams"), "k", 0}, []int{6}},
		{[]any{"XREAD", "COUNT", 7, "STREAMS", "k", 0}, []int{4}},
		{[]any{"XREAD", 7, "STREAMS", "k", 0}, nil},
		{[]any{"MSET", 1, 2, 3, 4}, []int{1, 3}},
		{[]any{[]byte("get"), 42}, []int{1}},
		{[]any{42, "k"}, nil},
		{[]any{nil}, nil},
		{[]any{}, nil},
		{nil, nil},
		{[]any{"SORT", "k", 5, "STORE", "d"}, []int{1, 4}},
		{[]any{"MIGRATE", "h", 1, []byte{}, 0, 5000, "KEYS", "a"}, []int{7}},
		{[]any{"MIGRATE", "h", 1, 0, 0, 5000, "KEYS", "a"}, nil},
		{[]any{"XREAD", "STREAMS\x00junk", "k", "0"}, []int{2}}, // strcasecmp stops at NUL
		// Named types count by their kind (issue 23, point 2).
		{[]any{"EVAL", "s", namedCount(2), "k1", "k2"}, []int{3, 4}},
		{[]any{"EVAL", "s", namedCount(-1), "k1"}, nil},
		{[]any{"EVAL", "s", time.Duration(1), "k1"}, []int{3}},
		{[]any{"EVAL", "s", namedText("1"), "k1"}, []int{3}},
		{[]any{"EVAL", "s", namedFlag(true), "k1"}, []int{3}},
		{[]any{"EVAL", "s", namedReal(2), "k1", "k2"}, []int{3, 4}},
		{[]any{"EVAL", "s", namedUnsigned(1), "k1"}, []int{3}},
		{[]any{"XREAD", "COUNT", 7, namedText("streams"), "k", 0}, []int{4}},
		{[]any{namedText("GET"), namedText("k")}, []int{1}},
		{[]any{namedBlob("mset"), "a", 1, "b", 2}, []int{1, 3}},
	}
	for _, c := range cases {
		if got := KeyIndexes(c.args, nil); !slices.Equal(got, c.want) {
			t.Errorf("KeyIndexes(%#v) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestPrefixableKeyIndexes(t *testing.T) {
	cases := []keyCase{
		line("SPUBLISH ch msg"),
		line("SSUBSCRIBE a b"),
		line("SUNSUBSCRIBE a"),
		line("PUBLISH ch msg"),
		line("GET k", 1),
		line("MSET a 1 b 2", 1, 3),
		line("EVAL s 1 k", 3),
		line("XINFO STREAM k", 2),
	}
	for _, c := range cases {
		if got := PrefixableKeyIndexes(c.args, nil); !slices.Equal(got, c.want) {
			t.Errorf("PrefixableKeyIndexes(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	// Everywhere else the two agree.
	for _, c := range keyCases {
		name := strings.ToLower(c.args[0].(string))
		if name == "spublish" || name == "ssubscribe" || name == "sunsubscribe" {
			continue
		}
		if got := PrefixableKeyIndexes(c.args, nil); !slices.Equal(got, c.want) {
			t.Errorf("PrefixableKeyIndexes(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestIsBlocking(t *testing.T) {
	cases := []struct {
		args []any
		want bool
	}{
		{words("BLPOP k 0"), true},
		{words("blpop k 0"), true},
		{words("BRPOP k 0"), true},
		{words("BRPOPLPUSH a b 0"), true},
		{words("BLMOVE a b LEFT LEFT 0"), true},
		{words("BLMPOP 0 1 a LEFT"), true},
		{words("BZPOPMIN z 0"), true},
		{words("BZPOPMAX z 0"), true},
		{words("BZMPOP 0 1 z MIN"), true},
		{words("WAIT 1 0"), true},
		{words("WAITAOF 1 0 0"), true},
		{[]any{[]byte("wait"), 1, 0}, true},
		{words("XREAD BLOCK 0 STREAMS k 0"), true},
		{words("xread count 1 block 100 streams k $"), true},
		{[]any{"XREAD", "COUNT", 1, "BLOCK", 0, "STREAMS", "k", "$"}, true},
		{words("XREAD STREAMS k 0"), false},
		{words("XREAD COUNT 5 STREAMS k 0"), false},
		{words("XREAD STREAMS block 0"), false},
		{words("XREAD BLOCK"), false},
		{words("XREAD BLOCK 0"), false},
		{words("XREAD BLOCK 0 FOO STREAMS k 0"), false},
		{words("XREAD COUNT block STREAMS k 0"), false},
		{words("XREADGROUP COUNT 1 GROUP streams c BLOCK 10 STREAMS k >"), true},
		{words("XREADGROUP GROUP g c BLOCK 0 STREAMS k >"), true},
		{words("XREADGROUP GROUP g c NOACK BLOCK 0 STREAMS k >"), true},
		{words("XREADGROUP GROUP block block STREAMS k >"), false},
		{words("XREADGROUP GROUP g c COUNT 1 STREAMS block >"), false},
		{words("XREAD GROUP g c BLOCK 0 STREAMS k >"), false}, // GROUP is XREADGROUP's only
		{words("GET k"), false},
		{words("LPOP k"), false},
		{words("SUBSCRIBE ch"), false},
		{words("PSUBSCRIBE ch*"), false},
		{words("SSUBSCRIBE ch"), false},
		{words("MONITOR"), false},
		{words("CLIENT PAUSE 100"), false},
		{words("NOSUCH"), false},
		{[]any{}, false},
		{[]any{5}, false},
	}
	for _, c := range cases {
		if got := IsBlocking(c.args); got != c.want {
			t.Errorf("IsBlocking(%q) = %v, want %v", c.args, got, c.want)
		}
		// With the entry looked up already, the same answer.
		info, _ := LookupArgs(c.args)
		if got := InfoIsBlocking(info, c.args); got != c.want {
			t.Errorf("InfoIsBlocking(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// An entry the client learned from COMMAND INFO says itself whether its command
// blocks: a module's blocking command the table does not know blocks, and a command
// renamed on the server keeps its flag under its new name.
func TestInfoIsBlockingLearned(t *testing.T) {
	learned := &Info{Name: "mod.bpop", Arity: -3, Flags: FlagWrite | FlagBlocking}
	args := words("MOD.BPOP k 0")
	if IsBlocking(args) {
		t.Fatalf("IsBlocking(%q) = true; the table does not know it", args)
	}
	if !InfoIsBlocking(learned, args) {
		t.Errorf("InfoIsBlocking(%q) = false, want true: its entry is blocking", args)
	}
	blpop, _ := Lookup("blpop")
	renamed := *blpop
	renamed.Name = "myblpop"
	if !InfoIsBlocking(&renamed, words("MYBLPOP k 0")) {
		t.Errorf("InfoIsBlocking(MYBLPOP) = false, want true: BLPOP renamed blocks")
	}
}

// TestIsBlockingEveryFlaggedCommand checks the table's blocking commands one by one,
// in both cases: IsBlocking's first-letter shortcut must let every one of them through.
func TestIsBlockingEveryFlaggedCommand(t *testing.T) {
	for name, info := range commands {
		if info.Flags&FlagBlocking == 0 || name == "xread" || name == "xreadgroup" {
			continue
		}
		for _, n := range []string{name, strings.ToUpper(name)} {
			if !IsBlocking([]any{n, "k", 0}) {
				t.Errorf("IsBlocking(%s ...) = false, want true: the table marks it blocking", n)
			}
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"get", "GET", "Get"} {
		info, ok := Lookup(name)
		if !ok || info.Name != "get" || info.Arity != 2 || info.Flags&FlagReadonly == 0 || info.Flags&FlagFast == 0 {
			t.Errorf("Lookup(%q) = %+v, %v", name, info, ok)
		}
	}
	for _, name := range []string{"xinfo|stream", "XINFO|STREAM", "Object|Encoding", "memory|usage"} {
		info, ok := Lookup(name)
		if !ok || info.Name != strings.ToLower(name) || len(info.KeySpecs) == 0 {
			t.Errorf("Lookup(%q) = %+v, %v", name, info, ok)
		}
	}
	for _, name := range []string{"", "nosuch", "xinfo|", "xinfo|nosuch", "nosuch|stream", "|", "get|x", strings.Repeat("a", 1000)} {
		if info, ok := Lookup(name); ok || info != nil {
			t.Errorf("Lookup(%q) = %+v, %v; want nil, false", name, info, ok)
		}
	}

	xinfo, ok := Lookup("XINFO")
	if !ok || xinfo.Sub == nil || len(xinfo.KeySpecs) != 0 {
		t.Fatalf("Lookup(XINFO) = %+v, %v", xinfo, ok)
	}
	if get, _ := Lookup("get"); get.Sub != nil {
		t.Errorf("GET has subcommands: %v", get.Sub)
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{words("XINFO STREAM k"), "xinfo|stream"},
		{[]any{[]byte("xinfo"), []byte("Stream"), "k"}, "xinfo|stream"},
		{words("OBJECT ENCODING k"), "object|encoding"},
		{words("CONFIG GET x"), "config|get"},
		{words("XINFO"), "xinfo"},
		{words("XINFO NOSUCH k"), "xinfo"},
		{[]any{"XINFO", 5}, "xinfo"},
		{words("GET k"), "get"},
		{words("GET stream"), "get"},
	} {
		info, ok := LookupArgs(c.args)
		if !ok || info.Name != c.want {
			t.Errorf("LookupArgs(%q) = %+v, %v; want %s", c.args, info, ok, c.want)
		}
	}
	for _, args := range [][]any{nil, {}, {nil}, {1}, words("NOSUCH x")} {
		if info, ok := LookupArgs(args); ok || info != nil {
			t.Errorf("LookupArgs(%q) = %+v, %v; want nil, false", args, info, ok)
		}
	}
}

// TestTableShape checks every entry of the generated table for a key specification
// the evaluator could misread, so that a table regenerated from another server version
// fails here rather than in production.
func TestTableShape(t *testing.T) {
	if len(commands) < 200 {
		t.Fatalf("only %d commands in the table", len(commands))
	}
	for name, info := range commands {
		checkInfo(t, name, info)
		if strings.Contains(name, "|") {
			t.Errorf("%s: top-level name with |", name)
		}
		for sub, si := range info.Sub {
			if si.Name != name+"|"+sub {
				t.Errorf("%s: subcommand %q is named %q", name, sub, si.Name)
			}
			if si.Sub != nil {
				t.Errorf("%s: nested subcommands", si.Name)
			}
			checkInfo(t, si.Name, si)
		}
		if info.Sub != nil && len(info.KeySpecs) != 0 {
			t.Errorf("%s: container with key specs", name)
		}
	}
	// Spot checks of what the rest of the client relies on.
	for _, name := range []string{"get", "set", "mget", "eval", "xread", "object|encoding", "spublish"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s missing from the table", name)
		}
	}
}

func checkInfo(t *testing.T, name string, info *Info) {
	t.Helper()
	if info.Name != name {
		t.Errorf("%s: entry named %q", name, info.Name)
	}
	if info.Name != strings.ToLower(info.Name) || len(info.Name) > maxNameLen {
		t.Errorf("%s: name not lower case or longer than %d", info.Name, maxNameLen)
	}
	if info.Arity == 0 || strings.Contains(info.Name, "|") && info.Arity > -2 && info.Arity < 2 {
		t.Errorf("%s: arity %d", info.Name, info.Arity)
	}
	if info.Flags&FlagReadonly != 0 && info.Flags&FlagWrite != 0 {
		t.Errorf("%s: both readonly and write", info.Name)
	}
	for i, ks := range info.KeySpecs {
		where := func(format string, a ...any) {
			t.Helper()
			t.Errorf("%s key spec %d: "+format, append([]any{info.Name, i}, a...)...)
		}
		if ks.Begin.Kind == BeginUnknown || ks.Find.Kind == FindUnknown || ks.Flags&KeySpecIncomplete != 0 {
			continue // TestHandFinders covers these
		}
		switch ks.Begin.Kind {
		case BeginIndex:
			if ks.Begin.Pos < 1 || ks.Begin.Keyword != "" || ks.Begin.StartFrom != 0 {
				where("index begin %+v", ks.Begin)
			}
			if info.Arity > 0 && ks.Begin.Pos >= info.Arity {
				where("begins at %d beyond arity %d", ks.Begin.Pos, info.Arity)
			}
		case BeginKeyword:
			if ks.Begin.Keyword == "" || ks.Begin.Keyword != strings.ToUpper(ks.Begin.Keyword) || ks.Begin.StartFrom == 0 || ks.Begin.Pos != 0 {
				where("keyword begin %+v", ks.Begin)
			}
		default:
			where("begin kind %d", ks.Begin.Kind)
		}
		switch ks.Find.Kind {
		case FindRange:
			if ks.Find.KeyStep < 1 || ks.Find.Limit < 0 || ks.Find.Limit > 1 && ks.Find.LastKey != -1 {
				where("range %+v", ks.Find)
			}
			if info.Arity > 0 && ks.Begin.Kind == BeginIndex && ks.Find.LastKey >= 0 && ks.Begin.Pos+ks.Find.LastKey >= info.Arity {
				where("range ends beyond arity %d", info.Arity)
			}
		case FindKeynum:
			if ks.Find.KeyNumIdx < 0 || ks.Find.FirstKey <= ks.Find.KeyNumIdx || ks.Find.KeyStep < 1 {
				where("keynum %+v", ks.Find)
			}
			if info.Flags&FlagMovableKeys == 0 {
				where("keynum without movablekeys")
			}
		default:
			where("find kind %d", ks.Find.Kind)
		}
		if ks.Flags&(KeySpecRO|KeySpecRW|KeySpecOW|KeySpecRM) == 0 && ks.Flags&KeySpecNotKey == 0 {
			where("no access flag in %b", ks.Flags)
		}
	}
}

// TestHandFinders checks that every command whose key specs the server cannot evaluate
// itself (unknown or incomplete) has a hand-written finder, and that the only others
// are the deliberate XREAD and XREADGROUP.
func TestHandFinders(t *testing.T) {
	var all []*Info
	for _, info := range commands {
		all = append(all, info)
		for _, si := range info.Sub {
			all = append(all, si)
		}
	}
	var needed, hand []string
	for _, info := range all {
		// Movable keys without any spec (Redis 6's STRALGO) need a finder too.
		needs := info.Flags&FlagMovableKeys != 0 && len(info.KeySpecs) == 0
		for _, ks := range info.KeySpecs {
			if ks.Begin.Kind == BeginUnknown || ks.Find.Kind == FindUnknown || ks.Flags&KeySpecIncomplete != 0 {
				needs = true
			}
		}
		_, has := appendHandKeys(info, nil, nil)
		if needs && !has {
			t.Errorf("%s: unknown or incomplete key spec and no hand finder", info.Name)
		}
		if needs {
			needed = append(needed, info.Name)
		}
		if has {
			hand = append(hand, info.Name)
		}
	}
	slices.Sort(needed)
	slices.Sort(hand)
	if want := []string{"migrate", "sort", "sort_ro", "stralgo"}; !slices.Equal(needed, want) {
		t.Errorf("commands with unknown or incomplete specs: %v, want %v", needed, want)
	}
	if want := []string{"migrate", "sort", "sort_ro", "stralgo", "xread", "xreadgroup"}; !slices.Equal(hand, want) {
		t.Errorf("hand finders for %v, want %v", hand, want)
	}
}

// OneKeyFirst is computed once, when the table is made, for the commands whose only
// key is their first argument whatever follows it (options and flags included), and
// for no other: not for several keys, a key elsewhere, keys found by a hand rule or a
// shard channel. FromSpec computes it too; an entry built by hand lacks it.
func TestOneKeyFirst(t *testing.T) {
	cases := []struct {
		args []any
		want bool
	}{
		{words("GET k"), true},
		{words("SET k v"), true},
		{words("SET k v NX PX 100 GET"), true},
		{words("HSET h f v"), true},
		{words("ZADD z NX CH 1 m"), true},              // a key at 1, then optional flags
		{words("BITFIELD k GET u8 0"), true},           // its key spec's flags vary
		{words("GETEX k PERSIST"), true},               // an option after the key
		{words("EVALSHA sha 1 k"), false},              // keys counted by numkeys
		{words("MGET a b"), false},                     // several keys
		{words("LMOVE a b LEFT RIGHT"), false},         // two specifications
		{words("XREAD STREAMS s 0"), false},            // after a keyword
		{words("OBJECT ENCODING k"), false},            // the key is not first
		{words("SORT_RO k BY w_*"), false},             // a hand rule
		{words("SPUBLISH ch m"), false},                // a shard channel, not a key
		{words("PING"), false},                         // no key
		{words("CONFIG GET maxmemory"), false},         // no key
		{words("XINFO STREAM k"), false},               // key at 2, as OBJECT's
		{words("WAIT 1 0"), false},                     // no key
		{words("BITCOUNT k 0 1 BYTE"), true},           // optional range and unit
		{words("GETRANGE k 0 -1"), true},               // fixed arguments after the key
		{words("EXPIRE k 10 NX"), true},                // an optional flag after them
		{words("SINTERCARD 1 k LIMIT 1"), false},       // numkeys
		{words("GEORADIUS g 0 0 1 km STORE d"), false}, // STORE names a second key
	}
	for _, c := range cases {
		info, ok := LookupArgs(c.args)
		if !ok {
			t.Fatalf("%v: not in the table", c.args)
		}
		if got := info.OneKeyFirst(); got != c.want {
			t.Errorf("%v: %s.OneKeyFirst = %v, want %v", c.args, info.Name, got, c.want)
		}
	}

	get := &spec.Command{Name: "mod.get", Arity: 2, Flags: []string{"readonly"},
		KeySpecs: []spec.KeySpec{{Flags: []string{"RO"}, Begin: "index", Pos: 1, Find: "range", KeyStep: 1}}}
	if !FromSpec(get).OneKeyFirst() {
		t.Errorf("FromSpec(%s).OneKeyFirst = false, want true", get.Name)
	}
	get.KeySpecs[0].Flags = []string{"RO", "incomplete"}
	if FromSpec(get).OneKeyFirst() {
		t.Errorf("FromSpec(%s) with an incomplete spec: OneKeyFirst = true, want false", get.Name)
	}
	byHand := &Info{Name: "mod.get", KeySpecs: []KeySpec{{Flags: KeySpecRO, Begin: BeginSearch{Kind: BeginIndex, Pos: 1}, Find: FindKeys{Kind: FindRange, KeyStep: 1}}}}
	if byHand.OneKeyFirst() {
		t.Errorf("an entry built by hand: OneKeyFirst = true, want false")
	}
	if got := InfoKeyIndexes(byHand, words("MOD.GET k"), nil); !slices.Equal(got, []int{1}) {
		t.Errorf("InfoKeyIndexes of an entry built by hand = %v, want [1]", got)
	}
}

// For every entry of the table that has OneKeyFirst, at every argument count up to a
// few more than its arity, the key positions it gives are those its key
// specifications give when evaluated.
func TestOneKeyFirstAgreesWithKeySpecs(t *testing.T) {
	var all []*Info
	for _, info := range commands {
		all = append(all, info)
		for _, sub := range info.Sub {
			all = append(all, sub)
		}
	}
	n := 0
	for _, info := range all {
		if !info.OneKeyFirst() {
			continue
		}
		n++
		evaluated := *info
		evaluated.oneKeyFirst = false
		name := strings.Split(info.Name, "|")
		for argc := 0; argc <= max(info.Arity, -info.Arity)+3; argc++ {
			args := make([]any, argc)
			for i := range args {
				args[i] = "a" + strings.Repeat("x", i)
			}
			for i := 0; i < len(name) && i < argc; i++ {
				args[i] = name[i]
			}
			if got, want := InfoKeyIndexes(info, args, nil), InfoKeyIndexes(&evaluated, args, nil); !slices.Equal(got, want) {
				t.Errorf("%s, %d arguments: keys %v, the key specs give %v", info.Name, argc, got, want)
			}
			if got, want := InfoPrefixableKeyIndexes(info, args, nil), InfoPrefixableKeyIndexes(&evaluated, args, nil); !slices.Equal(got, want) {
				t.Errorf("%s, %d arguments: prefixable keys %v, the key specs give %v", info.Name, argc, got, want)
			}
		}
	}
	if n < 100 {
		t.Errorf("%d entries have OneKeyFirst; most commands of one key should", n)
	}
}

type (
	namedCount    int16
	namedUnsigned uint32
	namedText     string
	namedBlob     []byte
	namedFlag     bool
	namedReal     float32
)

func TestArgInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"42", 42, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1e3", 0, false}, {"0x10", 0, false},
	}
	for _, c := range cases {
		for _, arg := range []any{c.in, []byte(c.in), namedText(c.in), namedBlob(c.in)} {
			got, ok := argInt(arg)
			if got != c.want || ok != c.ok {
				t.Errorf("argInt(%#v) = %d, %v; want %d, %v", arg, got, ok, c.want, c.ok)
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	dst := make([]int, 0, 16)
	keyed := map[string][]any{
		"SET":          {"SET", "k", "v"},
		"MSET":         {"MSET", "k1", "v1", "k2", "v2"},
		"EVAL int":     {"EVAL", "s", 2, "k1", "k2"},
		"XREAD []byte": {[]byte("xread"), []byte("STREAMS"), "k", "0"},
		"XREAD named":  {namedText("xread"), namedBlob("STREAMS"), namedText("k"), "0"},
		"EVAL named":   {"EVAL", "s", namedCount(1), namedText("k1")},
		"XINFO STREAM": {"XINFO", "STREAM", "k"},
		"SORT STORE":   {"SORT", "k", "STORE", "d"},
		"MIGRATE KEYS": {"MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"},
		"ZUNIONSTORE":  {"ZUNIONSTORE", "d", "2", "a", "b"},
		"GEORADIUS":    {"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"},
	}
	for name, args := range keyed {
		if n := testing.AllocsPerRun(100, func() { dst = KeyIndexes(args, dst[:0]) }); n != 0 {
			t.Errorf("KeyIndexes %s: %v allocations per run, want 0", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { dst = PrefixableKeyIndexes(args, dst[:0]) }); n != 0 {
			t.Errorf("PrefixableKeyIndexes %s: %v allocations per run, want 0", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { IsBlocking(args) }); n != 0 {
			t.Errorf("IsBlocking %s: %v allocations per run, want 0", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { LookupArgs(args) }); n != 0 {
			t.Errorf("LookupArgs %s: %v allocations per run, want 0", name, n)
		}
	}
	blocking := []any{"XREADGROUP", "GROUP", "g", "c", "BLOCK", 0, "STREAMS", "k", ">"}
	if n := testing.AllocsPerRun(100, func() { IsBlocking(blocking) }); n != 0 {
		t.Errorf("IsBlocking: %v allocations per run, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { Lookup("XINFO|STREAM") }); n != 0 {
		t.Errorf("Lookup: %v allocations per run, want 0", n)
	}
}

func BenchmarkKeyIndexes(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []any
	}{
		{"SET", []any{"SET", "k", "v"}},
		{"MSET", []any{"MSET", "k1", "v1", "k2", "v2"}},
		{"EVAL", []any{"EVAL", "return 1", 2, "k1", "k2", "a"}},
		{"XREAD", []any{"XREAD", "COUNT", "10", "STREAMS", "k1", "k2", "0", "0"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]int, 0, 8)
			b.ReportAllocs()
			for b.Loop() {
				dst = KeyIndexes(bc.args, dst[:0])
			}
			if len(dst) == 0 {
				b.Fatal("no keys")
			}
		})
	}
}

func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Lookup("ZUNIONSTORE"); !ok {
			b.Fatal("not found")
		}
	}
}

// allNames lists every command and "container sub" pair in the table, sorted.
func allNames() [][]string {
	var names [][]string
	for name, info := range commands {
		names = append(names, []string{name})
		for sub := range info.Sub {
			names = append(names, []string{name, sub})
		}
	}
	slices.SortFunc(names, func(a, b []string) int { return strings.Compare(strings.Join(a, " "), strings.Join(b, " ")) })
	return names
}

// FuzzKeyIndexes feeds random arguments to every command of the table: no panic, every
// position inside the arguments and after the name, strictly increasing, dst's prefix
// untouched, and the prefixable keys a subset of the keys.
func FuzzKeyIndexes(f *testing.F) {
	for _, c := range keyCases {
		var sel uint16
		var rest []string
		for i, n := range allNames() {
			if strings.EqualFold(n[0], c.args[0].(string)) {
				sel = uint16(i)
				break
			}
		}
		for _, a := range c.args[1:] {
			rest = append(rest, a.(string))
		}
		f.Add(sel, uint8(0), strings.Join(rest, " "))
	}
	f.Add(uint16(0), uint8(0xff), "1 2 3 4 5")
	names := allNames()
	f.Fuzz(func(t *testing.T, sel uint16, kinds uint8, rest string) {
		name := names[int(sel)%len(names)]
		args := []any{name[0]}
		if len(name) > 1 {
			args = append(args, name[1])
		}
		for i, w := range strings.Split(rest, " ") {
			if len(args) > 64 {
				break
			}
			// kinds chooses, per argument, text, []byte or an integer where the word
			// parses as one.
			switch (kinds >> (uint(i) % 8)) & 3 {
			case 1:
				args = append(args, []byte(w))
			case 2:
				if n, ok := parseInt(w); ok {
					args = append(args, int(n))
				} else {
					args = append(args, w)
				}
			default:
				args = append(args, w)
			}
		}
		pre := []int{-1}
		got := KeyIndexes(args, pre)
		if got[0] != -1 {
			t.Fatalf("dst prefix overwritten: %v", got)
		}
		keys := got[1:]
		for i, k := range keys {
			if k < 1 || k >= len(args) {
				t.Fatalf("KeyIndexes(%q) = %v: %d out of range", args, keys, k)
			}
			if i > 0 && k <= keys[i-1] {
				t.Fatalf("KeyIndexes(%q) = %v: not strictly increasing", args, keys)
			}
		}
		pk := PrefixableKeyIndexes(args, nil)
		for _, k := range pk {
			if !slices.Contains(keys, k) {
				t.Fatalf("PrefixableKeyIndexes(%q) = %v not within KeyIndexes %v", args, pk, keys)
			}
		}
		IsBlocking(args)
	})
}
