package redisurl

import (
	"errors"
	"net/url"
	"strings"
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

// A password with an unescaped '/', '?' or '#' ends the user information early for
// net/url, so a piece of it lands in the host, the path or the query, and errors
// quoted it (net/url's "invalid port", a Cluster seed, a Sentinel host) and carried
// the whole URL in a *url.Error. Such a URL's error now names the cause and quotes
// nothing of the password.
func TestParseErrorsQuoteNoPieceOfAPassword(t *testing.T) {
	pieces := []string{"Zm9vQ", "YmFyQ", "pQrSt", "uVwXy"}
	for _, raw := range []string{
		"rediss://default:Zm9vQ/YmFyQ+@host:6380/0",
		"redis://:pQrSt?uVwXy@host",
		"redis://:pQrSt#uVwXy@host/0",
		"redis://pQrSt/uVwXy@host",
		"redis+cluster://:pQrSt/uVwXy@h1,h2",
		"rediss+cluster://u:Zm9vQ?YmFyQ@h1:7000",
		"redis+sentinel://:pQrSt/uVwXy@s1,s2/mymaster",
		"redis+sentinel://u:Zm9vQ#YmFyQ@s1/mymaster",
	} {
		_, err := Parse(raw)
		if err == nil {
			t.Errorf("Parse(%q): no error", raw)
			continue
		}
		if !errors.Is(err, errAmbiguousUserinfo) {
			t.Errorf("Parse(%q): %v; want errAmbiguousUserinfo", raw, err)
		}
		for _, p := range pieces {
			if strings.Contains(err.Error(), p) {
				t.Errorf("Parse(%q): the error %q quotes %q of the password", raw, err, p)
			}
		}
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			t.Errorf("Parse(%q): still a *url.Error of %q", raw, ue.URL)
		}
	}
	// An '@' in the query of a URL without user information parses as before.
	if c, err := Parse("redis://h:1/0?client_name=a@b"); err != nil || c.ClientName != "a@b" {
		t.Errorf("an '@' in the query: %+v, %v", c, err)
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
