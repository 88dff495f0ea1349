package redisurl

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secret is a password no test output may contain.
const secret = "s3cr3t-Pa55"

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"redis://u:" + secret + "@h:1/0", "redis://u:xxxxx@h:1/0"},
		{"redis://" + secret + "@h", "redis://:xxxxx@h"},
		{"redis://:" + secret + "@h", "redis://:xxxxx@h"},
		{"rediss://u:p@ss@h?x=1", "rediss://u:xxxxx@h?x=1"},
		{"redis+sentinel://u:" + secret + "@a,b/m?sentinel_password=" + secret + "&replica_reads=1",
			"redis+sentinel://u:xxxxx@a,b/m?sentinel_password=xxxxx&replica_reads=1"},
		{"redis://h:1/0", "redis://h:1/0"},
		{"not a url", "not a url"},
	} {
		if got := redact(c.in); got != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzParse checks that Parse does not panic and that whatever parses names one
// server, or, for Sentinels and Cluster seeds, at least one. Its seeds are the corpus
// in testdata/fuzz/FuzzParse. That each address is a valid host:port (seed-bracket-host
// parses here into "]0:6379") is the check of the caller's options: the root package's
// FuzzParseURL, seeded with this corpus, checks that ParseURL's errors match its
// sentinels and that what it returns is valid Options.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := Parse(raw)
		if err != nil {
			return
		}
		if len(c.Addrs) != 1 && ((c.SentinelMaster == "" && !c.Cluster) || len(c.Addrs) == 0) {
			t.Fatalf("%q: %d addresses", raw, len(c.Addrs))
		}
	})
}
