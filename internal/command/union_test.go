package command

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire/internal/command/spec"
	"github.com/respire/respire/resp"
)

// recorded is one server's COMMAND reply from testdata/command.
type recorded struct {
	server string
	cmds   []*spec.Command
}

// readRecorded reads every recorded COMMAND reply the table is generated from.
func readRecorded(t *testing.T) []recorded {
	t.Helper()
	files, err := filepath.Glob("testdata/command/*.COMMAND.resp")
	if err != nil || len(files) != 5 {
		t.Fatalf("recorded replies: %v, %v", files, err)
	}
	var out []recorded
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := resp.NewReader(bufio.NewReader(fh), resp.Limits{}).Read()
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cmds, err := Specs(v)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, recorded{strings.TrimSuffix(filepath.Base(f), ".COMMAND.resp"), cmds})
	}
	return out
}

// The table holds every command and subcommand of every recorded server, and names
// them all as its sources.
func TestTableIsTheUnion(t *testing.T) {
	servers := readRecorded(t)
	for _, s := range servers {
		if !slices.Contains(Sources, s.server) {
			t.Errorf("%s is not among the table's sources %v", s.server, Sources)
		}
		for _, c := range s.cmds {
			if _, ok := Lookup(c.Name); !ok {
				t.Errorf("%s: %s missing from the table", s.server, c.Name)
			}
			for _, sc := range c.Subs {
				if _, ok := Lookup(sc.Name); !ok {
					t.Errorf("%s: %s missing from the table", s.server, sc.Name)
				}
			}
		}
	}
	if len(Sources) != len(servers) {
		t.Errorf("sources %v, recorded %d", Sources, len(servers))
	}
}

// For every command and subcommand of every recorded server, at its arity and a few
// arguments more, the table finds the keys (which give the Cluster slot) and the
// prefixable keys (which get Options.KeyPrefix) that server's own COMMAND entry gives.
// Each argument is its index in decimal, so numkeys arguments take several values.
func TestUnionKeysAgreeWithEveryServer(t *testing.T) {
	compared := 0
	for _, s := range readRecorded(t) {
		var entries []*spec.Command
		for _, c := range s.cmds {
			entries = append(entries, c)
			entries = append(entries, c.Subs...)
		}
		for _, e := range entries {
			own := FromSpec(e)
			if e.Legacy && e.HasFlag("movablekeys") {
				// Redis 6's legacy positions of a movable-key command are a hint, not its keys.
				continue
			}
			if why, ok := divergent[s.server+" "+e.Name]; ok {
				t.Logf("%s %s: the table follows the newer servers: %s", s.server, e.Name, why)
				continue
			}
			name := strings.Split(e.Name, "|")
			if table, _ := Lookup(name[0]); len(name) == 1 && table.Sub != nil && own.Sub == nil {
				// Redis 6 describes a container's keys on the container (OBJECT k at 2);
				// newer servers on its subcommands, where the table has them.
				continue
			}
			for _, args := range sweepArgs(name, e.Arity) {
				want := InfoKeyIndexes(own, args, nil)
				if !own.KeysKnown() {
					t.Errorf("%s: %s: keys not known from its own entry", s.server, e.Name)
					break
				}
				if got := KeyIndexes(args, nil); !slices.Equal(got, want) {
					t.Errorf("%s: %q: table keys %v, the server's entry %v", s.server, args, got, want)
				}
				wantP := InfoPrefixableKeyIndexes(own, args, nil)
				if got := PrefixableKeyIndexes(args, nil); !slices.Equal(got, wantP) {
					t.Errorf("%s: %q: table prefixable keys %v, the server's entry %v", s.server, args, got, wantP)
				}
				compared++
			}
		}
	}
	if compared < 2000 {
		t.Errorf("only %d argument lists compared", compared)
	}
	t.Logf("compared %d argument lists", compared)
}

// divergent are the entries whose keys the newer servers describe differently, the
// table following those.
var divergent = map[string]string{
	"redis-6.0.16 pfdebug": "6.0 declares no keys; 7.0 and later the key at 2, which PFDEBUG reads",
}

// sweepArgs returns argument lists for a command of the given arity: the name (and
// subcommand) followed by numbered arguments, at the arity, or for a minimum arity at
// several lengths.
func sweepArgs(name []string, arity int) [][]any {
	lengths := []int{arity}
	if arity < 0 {
		lengths = []int{-arity, -arity + 1, -arity + 2, -arity + 3, -arity + 5}
	}
	var out [][]any
	for _, n := range lengths {
		args := make([]any, 0, n)
		for _, w := range name {
			args = append(args, strings.ToUpper(w))
		}
		for i := len(args); i < n; i++ {
			args = append(args, strconv.Itoa(i))
		}
		out = append(out, args)
	}
	return out
}

// The commands the Redis 7.0 table did not know, which KeyPrefix used to skip and
// Cluster routed as keyless (issue 10).
func TestNewerCommandsKeys(t *testing.T) {
	tests := []struct {
		line       string
		keys, pfx  []int
		sourceOnly string // the only recorded server with it, for the record
	}{
		{"HGETEX h PX 100 FIELDS 2 a b", []int{1}, []int{1}, "redis-8.6.3, valkey-9.1.2"},
		{"HSETEX h FNX PX 100 FIELDS 1 a v", []int{1}, []int{1}, "redis-8.6.3, valkey-9.1.2"},
		{"HEXPIRE h 10 FIELDS 1 a", []int{1}, []int{1}, "redis-8.6.3, valkey-9.1.2"},
		{"HPERSIST h FIELDS 1 a", []int{1}, []int{1}, "redis-8.6.3, valkey-9.1.2"},
		{"HGETDEL h FIELDS 1 a", []int{1}, []int{1}, "redis-8.6.3"},
		{"DELEX k IFEQ v", []int{1}, []int{1}, "redis-8.6.3"},
		{"DIGEST k", []int{1}, []int{1}, "redis-8.6.3"},
		{"DELIFEQ k v", []int{1}, []int{1}, "valkey-9.1.2"},
		{"MSETEX 2 a 1 b 2 PX 100", []int{2, 4}, []int{2, 4}, "redis-8.6.3"},
		{"XACKDEL s g IDS 1 1-0", []int{1}, []int{1}, "redis-8.6.3"},
		{"XDELEX s IDS 1 1-0", []int{1}, []int{1}, "redis-8.6.3"},
		{"LMPOP 2 a b LEFT", []int{2, 3}, []int{2, 3}, "redis-7.0.15+"},
		{"STRALGO LCS KEYS a b LEN", []int{3, 4}, []int{3, 4}, "redis-6.0.16"},
		{"STRALGO LCS STRINGS a b", nil, nil, "redis-6.0.16"},
		{"SPUBLISH ch m", []int{1}, nil, "redis-7.0.15+"},
	}
	for _, tt := range tests {
		args := words(tt.line)
		if got := KeyIndexes(args, nil); !slices.Equal(got, tt.keys) {
			t.Errorf("%s (%s): keys %v, want %v", tt.line, tt.sourceOnly, got, tt.keys)
		}
		if got := PrefixableKeyIndexes(args, nil); !slices.Equal(got, tt.pfx) {
			t.Errorf("%s (%s): prefixable keys %v, want %v", tt.line, tt.sourceOnly, got, tt.pfx)
		}
	}
}

// An entry learned from a server whose movable keys its specs do not describe is not
// usable for keys; one that describes them is.
func TestKeysKnown(t *testing.T) {
	tests := []struct {
		info *Info
		want bool
	}{
		{&Info{Name: "mod.get", KeySpecs: []KeySpec{{Flags: KeySpecRO, Begin: BeginSearch{Kind: BeginIndex, Pos: 1}, Find: FindKeys{Kind: FindRange, KeyStep: 1}}}}, true},
		{&Info{Name: "mod.ping"}, true},
		{&Info{Name: "mod.movable", Flags: FlagMovableKeys}, false},
		{&Info{Name: "mod.unknown", Flags: FlagMovableKeys, KeySpecs: []KeySpec{{Flags: KeySpecRW}}}, false},
		{&Info{Name: "mod.incomplete", Flags: FlagMovableKeys, KeySpecs: []KeySpec{{Flags: KeySpecRW | KeySpecIncomplete, Begin: BeginSearch{Kind: BeginIndex, Pos: 1}, Find: FindKeys{Kind: FindRange, KeyStep: 1}}}}, false},
	}
	for _, tt := range tests {
		if got := tt.info.KeysKnown(); got != tt.want {
			t.Errorf("%s: KeysKnown = %v", tt.info.Name, got)
		}
	}
	for name, info := range commands {
		if !info.KeysKnown() {
			t.Errorf("%s: the generated table's entry does not know its keys", name)
		}
	}
}

// Without hides commands from a copy only.
func TestTableWithout(t *testing.T) {
	tb := Default.Without("hgetex")
	if _, ok := tb.LookupArgs([]any{"HGETEX", "h"}); ok {
		t.Error("hgetex still in the copy")
	}
	if _, ok := Default.LookupArgs([]any{"HGETEX", "h"}); !ok {
		t.Error("hgetex gone from the default table")
	}
	if info, ok := tb.LookupArgs([]any{"object", "encoding", "k"}); !ok || info.Name != "object|encoding" {
		t.Errorf("object encoding in the copy = %v, %v", info, ok)
	}
	tb = Default.Without("object|encoding")
	if info, _ := tb.LookupArgs([]any{"object", "encoding", "k"}); info.Name != "object" {
		t.Errorf("object encoding without the subcommand = %s, want the container", info.Name)
	}
	if info, _ := Default.LookupArgs([]any{"object", "encoding", "k"}); info.Name != "object|encoding" {
		t.Errorf("object encoding gone from the default table: %s", info.Name)
	}
}

// The table carries each command's Cluster policy tips as the newest recorded server
// that has the command reports them, read through FromSpec as a command learned at run
// time would be; the policies Cluster fan-out relies on are there.
func TestTablePolicyTips(t *testing.T) {
	for _, s := range readRecorded(t) {
		for _, c := range s.cmds {
			for _, e := range append([]*spec.Command{c}, c.Subs...) {
				info, _ := Lookup(e.Name)
				got := FromSpec(e)
				if e.Tip("request_policy") != "" && got.Request == RequestDefault ||
					e.Tip("response_policy") != "" && got.Response == ResponseDefault {
					t.Errorf("%s: %s tips %q read as %v/%v", s.server, e.Name, e.Tips, got.Request, got.Response)
				}
				if s.server == Sources[0] && info != nil && (info.Request != got.Request || info.Response != got.Response) {
					t.Errorf("%s: table has %v/%v, %s says %v/%v", e.Name, info.Request, info.Response, s.server, got.Request, got.Response)
				}
			}
		}
	}
	for name, want := range map[string][2]any{
		"config|set":    {RequestAllNodes, ResponseAllSucceeded},
		"script|load":   {RequestAllNodes, ResponseAllSucceeded},
		"flushall":      {RequestAllShards, ResponseAllSucceeded},
		"dbsize":        {RequestAllShards, ResponseAggSum},
		"keys":          {RequestAllShards, ResponseDefault},
		"script|exists": {RequestAllShards, ResponseAggLogicalAnd},
		"script|kill":   {RequestAllShards, ResponseOneSucceeded},
		"wait":          {RequestAllShards, ResponseAggMin},
		"info":          {RequestAllShards, ResponseSpecial},
		"scan":          {RequestSpecial, ResponseSpecial},
		"get":           {RequestDefault, ResponseDefault},
	} {
		info, ok := Lookup(name)
		if !ok || info.Request != want[0] || info.Response != want[1] {
			t.Errorf("%s: %v/%v, want %v/%v", name, info.Request, info.Response, want[0], want[1])
		}
	}
}
