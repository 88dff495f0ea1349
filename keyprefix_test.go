package respire

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/respire/respire/test/testserver"
)

// KeyPrefix reaches every key of commands of every key-spec shape; what the server
// actually stored is the proof.
func TestKeyPrefixOnEveryKeyShape(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, KeyPrefix: "tenant1:"})
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
		want Options
	}{
		{"redis://127.0.0.1", Options{Addrs: []string{"127.0.0.1:6379"}}},
		{"redis://localhost:6380/2", Options{Addrs: []string{"localhost:6380"}, DB: 2}},
		{"redis://user:pa%20ss@h:1/", Options{Addrs: []string{"h:1"}, Username: "user", Password: "pa ss"}},
		{"redis://:secret@h:1", Options{Addrs: []string{"h:1"}, Password: "secret"}},
		{"redis://secret@h:1", Options{Addrs: []string{"h:1"}, Password: "secret"}},
		{"redis://[::1]:7000?protocol=2&client_name=app&dial_timeout=2s&read_timeout=1s&write_timeout=500ms&pool_size=4&min_idle=1&key_prefix=t:",
			Options{Addrs: []string{"[::1]:7000"}, Protocol: 2, ClientName: "app", DialTimeout: 2e9, ReadTimeout: 1e9, WriteTimeout: 5e8, PoolSize: 4, MinIdle: 1, KeyPrefix: "t:"}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.url)
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
	tlsOpts, err := ParseURL("rediss://cache.example:6380")
	if err != nil || tlsOpts.TLS == nil || tlsOpts.TLS.ServerName != "cache.example" {
		t.Errorf("rediss: %+v %v", tlsOpts, err)
	}
	for _, bad := range []string{
		"", "http://h:1", "redis://", "redis:///0", "redis://h:1/x", "redis://h:1/-1", "redis://h:notaport",
		"redis://h:1?nope=1", "redis://h:1?protocol=9", "redis://h:1?dial_timeout=soon", "redis://h:1?protocol=2&protocol=3",
		"redis://h:99999", "redis://user@h:1?pool_size=-1", "::not a url",
	} {
		_, err := ParseURL(bad)
		if !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%q: %v, want an invalid URL error", bad, err)
		}
	}
	if _, err := Connect(context.Background(), "redis://h:1?nope=1"); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("Connect with a bad URL: %v", err)
	}
}
