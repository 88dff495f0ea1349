package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/redisurl"
	"github.com/respire/respire/test/testserver"
)

// secret is a password no test output may contain.
const secret = "s3cr3t-Pa55"

func TestOptionsStringRedactsPasswords(t *testing.T) {
	o := respire.Options{Addrs: []string{"h:1"}, Username: "alice", Password: secret, SentinelMaster: "m",
		SentinelUsername: "sam", SentinelPassword: secret + "-sentinel"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{o, &o} {
			got := fmt.Sprintf(verb, v)
			if strings.Contains(got, secret) {
				t.Errorf("Sprintf(%q, %T) = %s; shows the password", verb, v, got)
			}
			if !strings.Contains(got, "alice") || !strings.Contains(got, redisurl.Redacted) {
				t.Errorf("Sprintf(%q, %T) = %s; want the user name and %q", verb, v, got, redisurl.Redacted)
			}
		}
	}
	if o.Password != secret {
		t.Fatal("formatting changed the options")
	}
	if got := fmt.Sprint(respire.Options{Addrs: []string{"h:1"}}); strings.Contains(got, redisurl.Redacted) {
		t.Errorf("no password, yet %s shows one redacted", got)
	}
}

// TestParseURLErrorsRedactPasswords feeds ParseURL URLs that fail at each step, each
// with a password, and checks that no error shows it.
func TestParseURLErrorsRedactPasswords(t *testing.T) {
	for _, raw := range []string{
		"redis://u:" + secret + "@h:badport",
		"redis://u:" + secret + "@/0",
		"redis://u:" + secret + "@h/notadb",
		"redis://u:" + secret + "%zz@h",
		"redis://u:" + secret + "@h:1?nope=1",
		"redis://u:" + secret + "@h:1?dial_timeout=soon",
		"redis://" + secret + "@:1",
		"ftp://u:" + secret + "@h",
		"redis://u:" + secret + "@[::1",
		"redis+sentinel://u:" + secret + "@a,b",
		"redis+sentinel://u:" + secret + "@a,/m",
		"redis+sentinel://u:" + secret + "%zz@a/m",
		"redis+sentinel://a/m?sentinel_password=" + secret + "&replica_reads=maybe",
		"redis+sentinel://a/m/x?sentinel_password=" + secret,
		"redis+cluster://u:" + secret + "@a,b/1",
		"redis+cluster://u:" + secret + "@a:x,b",
		"redis+cluster://u:" + secret + "%zz@a,b",
		"rediss+cluster://u:" + secret + "@a?pool_size=-1",
	} {
		_, err := respire.ParseURL(raw)
		if err == nil {
			t.Errorf("respire.ParseURL(%q) succeeded", raw)
			continue
		}
		if !errors.Is(err, respire.ErrInvalidURL) && !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("respire.ParseURL(%q): %v matches neither ErrInvalidURL nor ErrInvalidOptions", raw, err)
		}
		for _, shown := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(shown, secret) {
				t.Errorf("respire.ParseURL(%q): error %s shows the password", raw, shown)
			}
		}
	}
}

// TestConnectErrorsRedactPasswords connects with a wrong password to a real server and
// to a listener that drops the connection during the handshake (which carries the
// password in HELLO AUTH): neither error may contain it.
func TestConnectErrorsRedactPasswords(t *testing.T) {
	s := testserver.Start(t, testserver.Config{RequirePass: "right"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 512)
			c.Read(buf) // the HELLO, then a hang-up
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i, raw := range []string{
		"redis://alice:" + secret + "@" + s.Addr(),
		"redis://:" + secret + "@" + s.Addr(),
		"redis://alice:" + secret + "@" + ln.Addr().String() + "?dial_timeout=2s",
	} {
		c, err := respire.Connect(ctx, raw)
		if err == nil {
			c.Close()
			t.Errorf("Connect to URL %d succeeded", i)
			continue
		}
		if strings.Contains(fmt.Sprintf("%+v", err), secret) {
			t.Errorf("Connect: error %v shows the password", err)
		}
	}
}
