package integration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// KeyPrefix reaches every key of commands of every key-spec shape; what the server
// actually stored is the proof.
func TestKeyPrefixOnEveryKeyShape(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "tenant1:"})
	ctx := context.Background()
	steps := []struct {
		shape string
		args  []any
		want  []string // keys that must exist afterwards, as the server names them
	}{
		{"single key", []any{"SET", "a", "1"}, []string{"tenant1:a"}},
		{"single key, []byte", []any{"SET", []byte("b"), "1"}, []string{"tenant1:b"}},
		{"single key, integer", []any{"SET", 7, "1"}, []string{"tenant1:7"}},
		{"key, value pairs", []any{"MSET", "m1", "x", "m2", "y"}, []string{"tenant1:m1", "tenant1:m2"}},
		{"two keys", []any{"RENAME", "m1", "m3"}, []string{"tenant1:m3"}},
		{"numkeys (EVAL)", []any{"EVAL", "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('SET', KEYS[2], ARGV[1])", 2, "e1", "e2", "v"}, []string{"tenant1:e1", "tenant1:e2"}},
		{"destination and numkeys", []any{"ZADD", "z1", 1, "one"}, []string{"tenant1:z1"}},
		{"destination and numkeys", []any{"ZUNIONSTORE", "zdst", 2, "z1", "z1", "WEIGHTS", 1, 2}, []string{"tenant1:zdst"}},
		{"numkeys later (LMPOP)", []any{"RPUSH", "l1", "a", "b"}, []string{"tenant1:l1"}},
		{"keyword (SORT ... STORE)", []any{"SORT", "l1", "ALPHA", "STORE", "sorted"}, []string{"tenant1:sorted"}},
		{"STREAMS", []any{"XADD", "s1", "*", "f", "v"}, []string{"tenant1:s1"}},
		{"source and destination", []any{"LMOVE", "l1", "l2", "LEFT", "RIGHT"}, []string{"tenant1:l2"}},
		{"BITOP destination and sources", []any{"BITOP", "OR", "bdst", "a", "b"}, []string{"tenant1:bdst"}},
		{"PFMERGE", []any{"PFADD", "hll", "x"}, []string{"tenant1:hll"}},
	}
	for _, s := range steps {
		if _, err := c.Do(ctx, s.args...); err != nil {
			t.Fatalf("%s %v: %v", s.shape, s.args, err)
		}
		for _, k := range s.want {
			if srv.Do(t, "EXISTS", k) != "1" {
				t.Errorf("%s: %s not stored", s.shape, k)
			}
		}
	}
	// Reads find the prefixed keys, never bare ones.
	reads := []struct {
		args []any
		want string
	}{
		{[]any{"MGET", "a", "m2", "missing"}, `["1", "y", (nil)]`},
		{[]any{"LMPOP", 2, "nothere", "l1", "LEFT"}, `["tenant1:l1", ["b"]]`},
		{[]any{"XREAD", "COUNT", 1, "STREAMS", "s1", "0"}, "tenant1:s1"},
		{[]any{"EXISTS", "a", "b", "7", "zdst"}, "4"},
		{[]any{"OBJECT", "ENCODING", "a"}, `"int"`},
		{[]any{"SINTERCARD", 1, "nope"}, "0"},
		{[]any{"FCALL_RO", "nofunc", 0}, ""}, // keyless: must not panic; the error is the server's
	}
	for _, r := range reads {
		v, err := c.Do(ctx, r.args...)
		if r.want == "" {
			continue
		}
		if err != nil || !strings.Contains(v.String(), r.want) {
			t.Errorf("%v: %s %v, want %s", r.args, v, err, r.want)
		}
	}
	// A blocking command on a dedicated connection is prefixed too.
	if v, err := c.Do(ctx, "BLPOP", "nothing", "l2", 1); err != nil || !strings.Contains(v.String(), "tenant1:l2") {
		t.Errorf("BLPOP: %s %v", v, err)
	}
	// Nothing was written outside the prefix, and channels are not keys.
	keys := strings.Split(srv.Do(t, "KEYS", "*"), "\n")
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "tenant1:") {
			t.Errorf("key %q escaped the prefix", k)
		}
	}
	if n, err := c.Do(ctx, "PUBLISH", "chan", "x"); err != nil || n.String() != "0" {
		t.Errorf("PUBLISH: %s %v", n, err)
	}
	// The caller's argument slice is left alone.
	args := []any{"SET", "mine", "1"}
	if _, err := c.Do(ctx, args...); err != nil || args[1] != "mine" {
		t.Errorf("args modified: %v %v", args, err)
	}
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		url  string
		want respire.Options
	}{
		{"redis://127.0.0.1", respire.Options{Addrs: []string{"127.0.0.1:6379"}}},
		{"redis://localhost:6380/2", respire.Options{Addrs: []string{"localhost:6380"}, DB: 2}},
		{"redis://user:pa%20ss@h:1/", respire.Options{Addrs: []string{"h:1"}, Username: "user", Password: "pa ss"}},
		{"redis://:secret@h:1", respire.Options{Addrs: []string{"h:1"}, Password: "secret"}},
		{"redis://secret@h:1", respire.Options{Addrs: []string{"h:1"}, Password: "secret"}},
		{"redis://[::1]:7000?protocol=2&client_name=app&dial_timeout=2s&read_timeout=1s&write_timeout=500ms&pool_size=4&min_idle=1&key_prefix=t:",
			respire.Options{Addrs: []string{"[::1]:7000"}, Protocol: 2, ClientName: "app", DialTimeout: 2e9, ReadTimeout: 1e9, WriteTimeout: 5e8, PoolSize: 4, MinIdle: 1, KeyPrefix: "t:"}},
	}
	for _, tt := range tests {
		got, err := respire.ParseURL(tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if strings.Join(got.Addrs, ",") != strings.Join(tt.want.Addrs, ",") || got.DB != tt.want.DB ||
			got.Username != tt.want.Username || got.Password != tt.want.Password || got.Protocol != tt.want.Protocol ||
			got.ClientName != tt.want.ClientName || got.DialTimeout != tt.want.DialTimeout || got.ReadTimeout != tt.want.ReadTimeout ||
			got.WriteTimeout != tt.want.WriteTimeout || got.PoolSize != tt.want.PoolSize || got.MinIdle != tt.want.MinIdle ||
			got.KeyPrefix != tt.want.KeyPrefix || got.TLS != nil {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.url, got, tt.want)
		}
	}
	tlsOpts, err := respire.ParseURL("rediss://cache.example:6380")
	if err != nil || tlsOpts.TLS == nil || tlsOpts.TLS.ServerName != "cache.example" {
		t.Errorf("rediss: %+v %v", tlsOpts, err)
	}
	for _, bad := range []string{
		"", "http://h:1", "redis://", "redis:///0", "redis://h:1/x", "redis://h:1/-1", "redis://h:notaport",
		"redis://h:1?nope=1", "redis://h:1?protocol=9", "redis://h:1?dial_timeout=soon", "redis://h:1?protocol=2&protocol=3",
		"redis://h:99999", "redis://user@h:1?pool_size=-1", "::not a url",
	} {
		_, err := respire.ParseURL(bad)
		if !errors.Is(err, respire.ErrInvalidURL) && !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("%q: %v, want an invalid URL error", bad, err)
		}
	}
	if _, err := respire.Connect(context.Background(), "redis://h:1?nope=1"); !errors.Is(err, respire.ErrInvalidURL) {
		t.Errorf("Connect with a bad URL: %v", err)
	}
}

// TestParseURLErrorCause checks that ParseURL's error matches ErrInvalidURL and, with
// errors.As, the cause a caller may want: net/url's *url.Error for text that is not a
// URL, strconv's *strconv.NumError for a parameter that is not a number or boolean.
func TestParseURLErrorCause(t *testing.T) {
	tests := []struct {
		url   string
		cause func(error) bool
	}{
		{"redis://h:notaport", func(err error) bool {
			var ue *url.Error
			return errors.As(err, &ue) && ue.Op == "parse"
		}},
		{"redis://u:pw@h%zz", func(err error) bool {
			var ue *url.Error
			return errors.As(err, &ue) && !strings.Contains(ue.URL, "pw")
		}},
		{"redis://h:1?pool_size=four", func(err error) bool {
			var ne *strconv.NumError
			return errors.As(err, &ne) && ne.Func == "Atoi" && errors.Is(err, strconv.ErrSyntax)
		}},
		{"redis://h:1?protocol=99999999999999999999", func(err error) bool { return errors.Is(err, strconv.ErrRange) }},
		{"redis+sentinel://a:1/m?replica_reads=maybe", func(err error) bool {
			var ne *strconv.NumError
			return errors.As(err, &ne) && ne.Func == "ParseBool"
		}},
		{"redis+cluster://a:1,b:2?min_idle=x", func(err error) bool { return errors.Is(err, strconv.ErrSyntax) }},
	}
	for _, tt := range tests {
		_, err := respire.ParseURL(tt.url)
		if !errors.Is(err, respire.ErrInvalidURL) || !tt.cause(err) {
			t.Errorf("%q: %v, want ErrInvalidURL wrapping its cause", tt.url, err)
		}
	}
}

// confinedPaths are the ways a command reaches the server that a key prefix applies
// to: each runs one command and returns its reply.
var confinedPaths = []struct {
	name string
	run  func(ctx context.Context, c *respire.Client, args []any) (resp.Value, error)
}{
	{"Do", func(ctx context.Context, c *respire.Client, args []any) (resp.Value, error) {
		return c.Do(ctx, args...)
	}},
	{"Pipeline", func(ctx context.Context, c *respire.Client, args []any) (resp.Value, error) {
		res, err := c.Pipeline().Do("PING").Do(args...).Exec(ctx)
		if err != nil {
			return resp.Value{}, err
		}
		return res[1].Value, res[1].Err
	}},
	{"DoMulti", func(ctx context.Context, c *respire.Client, args []any) (resp.Value, error) {
		res, err := c.DoMulti(ctx, []any{"PING"}, args)
		if err != nil {
			return resp.Value{}, err
		}
		return res[1].Value, res[1].Err
	}},
	{"Tx.Do", func(ctx context.Context, c *respire.Client, args []any) (v resp.Value, err error) {
		err = c.Watch(ctx, func(tx *respire.Tx) error {
			v, err = tx.Do(ctx, args...)
			return err
		})
		return v, err
	}},
	{"Tx.Exec", func(ctx context.Context, c *respire.Client, args []any) (resp.Value, error) {
		var res []respire.Result
		err := c.Watch(ctx, func(tx *respire.Tx) (err error) {
			res, err = tx.Exec(ctx, []any{"PING"}, args)
			return err
		})
		if err != nil {
			return resp.Value{}, err
		}
		return res[1].Value, res[1].Err
	}},
}

// texts returns the strings of an array reply.
func texts(t *testing.T, v resp.Value) []string {
	t.Helper()
	elems, err := v.Array()
	if err != nil {
		t.Fatalf("not an array: %s", v)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if out[i], err = e.Text(); err != nil && !e.IsNull() {
			t.Fatalf("element %d of %s: %v", i, v, err)
		}
	}
	return out
}

// Issue #23 point 8: a prefixed client reads only its own keys, also through key
// patterns (SORT BY/GET, KEYS, SCAN MATCH), on every path; what it cannot confine it
// refuses. Two tenants and an unprefixed client share one server, each with the same
// key names holding different values.
func TestKeyPrefixConfinesPatterns(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	// Weights sort the list 3 2 1 for "tenant:" and 1 2 3 elsewhere; o_n names its
	// owner. The glob-special prefix "t*[x]:" has a decoy "tZx:" that its unescaped
	// pattern would match.
	for _, p := range []string{"tenant:", "other:", "", "t*[x]:", "tZx:"} {
		srv.Do(t, "RPUSH", p+"l", "1", "2", "3")
		for i := 1; i <= 3; i++ {
			w := strconv.Itoa(i)
			if p == "tenant:" {
				w = strconv.Itoa(4 - i)
			}
			srv.Do(t, "SET", fmt.Sprintf("%sw_%d", p, i), w)
			srv.Do(t, "SET", fmt.Sprintf("%so_%d", p, i), fmt.Sprintf("%sv%d", p, i))
		}
	}
	keysOf := func(prefix string) []string {
		var keys []string
		for _, k := range strings.Split(srv.Do(t, "KEYS", "*"), "\n") {
			if strings.HasPrefix(k, prefix) && (prefix != "" || !strings.Contains(k, ":")) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
	tenant := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "tenant:"})
	glob := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "t*[x]:"})
	star := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "s*:"})
	plain := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})

	for _, path := range confinedPaths {
		t.Run(path.name, func(t *testing.T) {
			run := func(c *respire.Client, args ...any) []string {
				t.Helper()
				v, err := path.run(ctx, c, args)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				return texts(t, v)
			}
			check := func(what string, got, want []string) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Errorf("%s = %q, want %q", what, got, want)
				}
			}
			check("tenant SORT BY GET", run(tenant, "SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#"),
				[]string{"tenant:v3", "3", "tenant:v2", "2", "tenant:v1", "1"})
			check("tenant SORT_RO BY GET", run(tenant, "SORT_RO", "l", "BY", "w_*", "GET", "o_*"),
				[]string{"tenant:v3", "tenant:v2", "tenant:v1"})
			check("tenant SORT BY nosort, GET a name without '*'", run(tenant, "SORT", "l", "BY", "nosort", "GET", "#", "GET", "o_1"),
				[]string{"1", "", "2", "", "3", ""})
			check("plain SORT BY GET", run(plain, "SORT", "l", "BY", "w_*", "GET", "o_*"), []string{"v1", "v2", "v3"})
			if _, err := path.run(ctx, tenant, []any{"SORT", "l", "BY", "w_*", "GET", "o_*", "STORE", "sorted"}); err != nil {
				t.Fatalf("SORT ... STORE: %v", err)
			}
			if got := srv.Do(t, "LRANGE", "tenant:sorted", "0", "-1"); got != "tenant:v3\ntenant:v2\ntenant:v1" {
				t.Errorf("tenant:sorted = %q", got)
			}
			srv.Do(t, "DEL", "tenant:sorted")

			keys := run(tenant, "KEYS", "*")
			slices.Sort(keys)
			check("tenant KEYS *", keys, keysOf("tenant:"))
			check("tenant KEYS o_1", run(tenant, "KEYS", "o_1"), []string{"tenant:o_1"})
			check("glob-special prefix KEYS *", sorted(run(glob, "KEYS", "*")), keysOf("t*[x]:"))

			scan := func(c *respire.Client, match ...any) []string {
				t.Helper()
				var keys []string
				cursor := "0"
				for {
					args := append([]any{"SCAN", cursor}, match...)
					v, err := path.run(ctx, c, append(args, "COUNT", 5))
					if err != nil {
						t.Fatalf("%v: %v", args, err)
					}
					parts, _ := v.Array()
					if len(parts) != 2 {
						t.Fatalf("SCAN reply %s", v)
					}
					cursor, _ = parts[0].Text()
					keys = append(keys, texts(t, parts[1])...)
					if cursor == "0" {
						return sorted(slices.Compact(sorted(keys)))
					}
				}
			}
			check("tenant SCAN", scan(tenant), keysOf("tenant:"))
			check("tenant SCAN MATCH o_*", scan(tenant, "MATCH", "o_*"), []string{"tenant:o_1", "tenant:o_2", "tenant:o_3"})
			check("glob-special prefix SCAN", scan(glob), keysOf("t*[x]:"))
			check("plain SCAN MATCH o_*", scan(plain, "MATCH", "o_*"), []string{"o_1", "o_2", "o_3"})

			for _, args := range [][]any{
				{"RANDOMKEY"},
				{"DEBUG", "OBJECT", "l"},
				{"cluster", "getkeysinslot", 0, 10},
			} {
				if _, err := path.run(ctx, tenant, args); !errors.Is(err, respire.ErrNotConfined) {
					t.Errorf("tenant %v: %v, want ErrNotConfined", args, err)
				}
			}
			if _, err := path.run(ctx, star, []any{"SORT", "l", "BY", "w_*"}); !errors.Is(err, respire.ErrNotConfined) {
				t.Errorf("SORT BY under a prefix holding '*': %v, want ErrNotConfined", err)
			}
			check("SORT BY nosort under a prefix holding '*'", run(star, "SORT", "l", "BY", "nosort"), nil)
			if _, err := path.run(ctx, plain, []any{"RANDOMKEY"}); err != nil {
				t.Errorf("RANDOMKEY without a prefix: %v", err)
			}
		})
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
