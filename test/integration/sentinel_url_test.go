package integration

import (
	"errors"
	"slices"
	"testing"

	"github.com/respire/respire"
)

func TestParseSentinelURL(t *testing.T) {
	tests := []struct {
		url  string
		want respire.Options
	}{
		{"redis+sentinel://127.0.0.1:26379/mymaster",
			respire.Options{Addrs: []string{"127.0.0.1:26379"}, SentinelMaster: "mymaster"}},
		{"redis+sentinel://a:1,b,[::1]:3,[::2]/mymaster/4",
			respire.Options{Addrs: []string{"a:1", "b:26379", "[::1]:3", "[::2]:26379"}, SentinelMaster: "mymaster", DB: 4}},
		{"redis+sentinel://app:pa%40ss@a:1,b:2/my%20master?sentinel_username=watch&sentinel_password=s%26p&replica_reads=true&protocol=2&key_prefix=t:",
			respire.Options{Addrs: []string{"a:1", "b:2"}, SentinelMaster: "my master", Username: "app", Password: "pa@ss",
				SentinelUsername: "watch", SentinelPassword: "s&p", ReplicaReads: true, Protocol: 2, KeyPrefix: "t:"}},
		{"REDIS+SENTINEL://secret@a:1/m/", respire.Options{Addrs: []string{"a:1"}, SentinelMaster: "m", Password: "secret"}},
		{"redis+sentinel://a:1/m?sentinel_password=only", respire.Options{Addrs: []string{"a:1"}, SentinelMaster: "m", SentinelPassword: "only"}},
	}
	for _, tt := range tests {
		got, err := respire.ParseURL(tt.url)
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
			continue
		}
		if !slices.Equal(got.Addrs, tt.want.Addrs) || got.SentinelMaster != tt.want.SentinelMaster || got.DB != tt.want.DB ||
			got.Username != tt.want.Username || got.Password != tt.want.Password ||
			got.SentinelUsername != tt.want.SentinelUsername || got.SentinelPassword != tt.want.SentinelPassword ||
			got.ReplicaReads != tt.want.ReplicaReads || got.Protocol != tt.want.Protocol || got.KeyPrefix != tt.want.KeyPrefix ||
			got.TLS != nil || got.Cluster {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.url, got, tt.want)
		}
	}
	tlsOpts, err := respire.ParseURL("rediss+sentinel://s1:26379,s2:26379/mymaster")
	if err != nil || tlsOpts.TLS == nil || tlsOpts.TLS.ServerName != "" {
		// ServerName stays empty: each connection verifies the host it dials.
		t.Errorf("rediss+sentinel: %+v %v", tlsOpts, err)
	}
	for _, bad := range []string{
		"redis+sentinel://a:1",           // no master name
		"redis+sentinel://a:1/",          // empty master name
		"redis+sentinel://a:1/m/x",       // db not a number
		"redis+sentinel://a:1/m/-1",      // negative db
		"redis+sentinel://a:1/m/1/extra", // too many segments
		"redis+sentinel:///m",            // no Sentinel
		"redis+sentinel://a:1,,b:2/m",    // empty host
		"redis+sentinel://a:1,b:99999/m", // bad port
		"redis+sentinel://a:notaport/m",  // bad port
		"redis+sentinel://a:1/m?replica_reads=maybe",
		"redis+sentinel://a:1/m?sentinel_password=a&sentinel_password=b",
		"redis+sentinel://a:1/m?nope=1",              // unknown parameter
		"redis+sentinel://a:1/m?sentinel_username=u", // user without password
		"redis+sentinel://u@h@a:1/m%zz",
		"foo+sentinel://a:1/m",
	} {
		_, err := respire.ParseURL(bad)
		if !errors.Is(err, respire.ErrInvalidURL) && !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("%q: %v, want an invalid URL error", bad, err)
		}
	}
}
