package emulator

import (
	"strings"
	"testing"

	"github.com/respire/respire/test/clusterserver"
)

// errorShapes is SERVER-REPLIES.md's "Error shapes across server generations", the
// Redis 6.0.16 and Redis 7.0.15 columns, plus the commands the Redis 6.0 profile refuses
// for lack of them and its NOPERM wording.
var errorShapes = []struct {
	as             string // ACL user; "" is the default user
	cmd            []string
	redis6, redis7 string
}{
	{"", args("DELEX", "k", "IFEQ", "v"),
		"-ERR unknown command `DELEX`, with args beginning with: `k`, `IFEQ`, `v`, \r\n",
		"-ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v' \r\n"},
	{"", args("DELIFEQ", "k", "v"),
		"-ERR unknown command `DELIFEQ`, with args beginning with: `k`, `v`, \r\n",
		"-ERR unknown command 'DELIFEQ', with args beginning with: 'k' 'v' \r\n"},
	{"", args("FOOBAR"),
		"-ERR unknown command `FOOBAR`, with args beginning with: \r\n",
		"-ERR unknown command 'FOOBAR', with args beginning with: \r\n"},
	{"", args("FOOBAR", "a"),
		"-ERR unknown command `FOOBAR`, with args beginning with: `a`, \r\n",
		"-ERR unknown command 'FOOBAR', with args beginning with: 'a' \r\n"},
	{"", args("CLIENT", "FOOBAR"),
		"-ERR Unknown subcommand or wrong number of arguments for 'FOOBAR'. Try CLIENT HELP\r\n",
		"-ERR unknown subcommand 'FOOBAR'. Try CLIENT HELP.\r\n"},
	{"", args("OBJECT", "FOOBAR", "k"),
		"-ERR Unknown subcommand or wrong number of arguments for 'FOOBAR'. Try OBJECT HELP.\r\n",
		"-ERR unknown subcommand 'FOOBAR'. Try OBJECT HELP.\r\n"},
	{"", args("CLIENT", "NO-EVICT", "on"),
		"-ERR Unknown subcommand or wrong number of arguments for 'NO-EVICT'. Try CLIENT HELP\r\n",
		"+OK\r\n"},
	{"", args("SET", "k", "v", "IFEQ", "v", "PX", "1000"), "-ERR syntax error\r\n", "-ERR syntax error\r\n"},
	{"", args("GET"), "-ERR wrong number of arguments for 'get' command\r\n", "-ERR wrong number of arguments for 'get' command\r\n"},
	{"", args("CLUSTER", "SHARDS"), "-ERR This instance has cluster support disabled\r\n", "-ERR This instance has cluster support disabled\r\n"},
	{"", args("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"),
		"-NOSCRIPT No matching script. Please use EVAL.\r\n", "-NOSCRIPT No matching script. Please use EVAL.\r\n"},
	{"", args("CLIENT", "KILL", "ID", "999999"), ":0\r\n", ":0\r\n"},
	{"", args("HELLO", "4"), "-NOPROTO unsupported protocol version\r\n", "-NOPROTO unsupported protocol version\r\n"},
	// Not recorded, as Redis 6.0 behaves: CLIENT PAUSE takes a timeout only (WRITE came
	// in 6.2), a subcommand's arity error is its unknown-subcommand error, and NOPERM
	// names the command without its subcommand.
	{"", args("CLIENT", "PAUSE", "10", "WRITE"),
		"-ERR Unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP\r\n", "+OK\r\n"},
	{"", args("CLIENT", "PAUSE", "10"), "+OK\r\n", "+OK\r\n"},
	{"", args("OBJECT", "ENCODING"),
		"-ERR Unknown subcommand or wrong number of arguments for 'ENCODING'. Try OBJECT HELP.\r\n",
		"-ERR wrong number of arguments for 'object|encoding' command\r\n"},
	{"lim", args("INCR", "k"),
		"-NOPERM this user has no permissions to run the 'incr' command or its subcommand\r\n",
		"-NOPERM this user has no permissions to run the 'incr' command\r\n"},
	{"lim", args("CLIENT", "KILL", "ID", "999999"),
		"-NOPERM this user has no permissions to run the 'client' command or its subcommand\r\n",
		"-NOPERM this user has no permissions to run the 'client|kill' command\r\n"},
	{"lim", args("DELEX", "k", "IFEQ", "v"),
		"-ERR unknown command `DELEX`, with args beginning with: `k`, `IFEQ`, `v`, \r\n",
		"-ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v' \r\n"},
	{"keyuser", args("SET", "other", "v"),
		"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
		"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
}

// TestErrorShapes checks the Redis 6.0 profile byte for byte against the recorded Redis
// 6.0.16 replies, and the Redis 7 pass-through against Redis 7.0.15's.
func TestErrorShapes(t *testing.T) {
	srv := startBackend(t)
	for _, p := range []Profile{Redis60, Redis7} {
		t.Run(string(p), func(t *testing.T) {
			e := Start(t, Config{Backend: srv.Addr(), Profile: p})
			conns := map[string]*rawClient{}
			for _, row := range errorShapes {
				if conns[row.as] == nil {
					conns[row.as] = dialAs(t, e.Addr(), row.as)
				}
				want := row.redis7
				if p == Redis60 {
					want = row.redis6
				}
				if got := conns[row.as].do(row.cmd...); got != want {
					t.Errorf("%s %q\n got  %q\n want %q", row.as, row.cmd, got, want)
				}
			}
			if p == Redis60 {
				// An unknown command inside MULTI is refused at queue time, and EXEC
				// aborts, in 6.0's wording.
				c := dialRaw(t, e.Addr())
				c.do("MULTI")
				if got := c.do("DELEX", "k"); got != "-ERR unknown command `DELEX`, with args beginning with: `k`, \r\n" {
					t.Errorf("DELEX in MULTI = %q", got)
				}
				if got := c.do("EXEC"); got != "-EXECABORT Transaction discarded because of previous errors.\r\n" {
					t.Errorf("EXEC = %q", got)
				}
			}
		})
	}
}

// A long argument list is cut at 128 bytes as Redis 6 cuts it.
func TestRedis6UnknownCommandArgsCut(t *testing.T) {
	a := strings.Repeat("a", 100)
	got := redis6UnknownCommand([][]byte{[]byte("X"), []byte(a), []byte(a), []byte(a)})
	want := "ERR unknown command `X`, with args beginning with: `" + a + "`, `" + strings.Repeat("a", 24) + "`, "
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// On a Cluster node, Redis 6.0 does not know CLUSTER SHARDS; CLUSTER SLOTS still
// answers, with the emulators' addresses.
func TestRedis6ClusterShards(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true, Masters: 2})
	emus := StartCluster(t, cl.Seeds(), []Profile{Redis60, Redis60})
	c := dialRaw(t, emus[0].Addr())
	if got := c.do("CLUSTER", "SHARDS"); got != "-ERR Unknown subcommand or wrong number of arguments for 'SHARDS'. Try CLUSTER HELP.\r\n" {
		t.Errorf("CLUSTER SHARDS = %q", got)
	}
	if got := c.do("cluster", "shards"); got != "-ERR Unknown subcommand or wrong number of arguments for 'shards'. Try CLUSTER HELP.\r\n" {
		t.Errorf("cluster shards = %q", got)
	}
	slots := c.value("CLUSTER", "SLOTS")
	if elems, err := slots.Array(); err != nil || len(elems) == 0 {
		t.Fatalf("CLUSTER SLOTS = %v", slots)
	}
	if got := c.do("CLUSTER", "SLOTS"); !strings.Contains(got, emus[0].Addr()[strings.LastIndexByte(emus[0].Addr(), ':')+1:]) {
		t.Errorf("CLUSTER SLOTS does not name the emulator: %q", got)
	}
}
