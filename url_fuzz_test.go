package respire

import (
	"errors"
	"net"
	"testing"
)

func FuzzParseURL(f *testing.F) {
	for _, seed := range []string{
		"redis://127.0.0.1", "rediss://u:p@h:6380/3?protocol=2", "redis://:pw@[::1]:7000/0?key_prefix=a%3Ab",
		"redis://h:1?dial_timeout=1s&read_timeout=-1ns", "redis://h:99999", "http://x", "redis://%zz", "",
		"redis+sentinel://u:p@a:26379,[::1],b:1/mymaster/2?sentinel_password=s&replica_reads=1", "rediss+sentinel://a/m",
		"redis+cluster://u:p@a:7000,[::1]:7001,b/?dial_timeout=1s", "rediss+cluster://a", "redis+cluster://a,/1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o, err := ParseURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("%q: error %v matches neither ErrInvalidURL nor ErrInvalidOptions", raw, err)
			}
			return
		}
		// Whatever parses is a usable configuration.
		if err := o.validate(); err != nil {
			t.Fatalf("%q parsed into invalid options: %v", raw, err)
		}
		if len(o.Addrs) != 1 && ((o.SentinelMaster == "" && !o.Cluster) || len(o.Addrs) == 0) {
			t.Fatalf("%q: %d addresses", raw, len(o.Addrs))
		}
		for _, a := range o.Addrs {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("%q: address %q: %v", raw, a, err)
			}
		}
	})
}
