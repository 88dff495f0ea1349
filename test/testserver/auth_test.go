package testserver

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantReplyError fails unless err is an error reply with the given prefix.
func wantReplyError(t *testing.T, what string, err error, prefix string) {
	t.Helper()
	var rerr *ReplyError
	if !errors.As(err, &rerr) || rerr.Prefix() != prefix {
		t.Errorf("%s: err = %v, want a %s reply", what, err, prefix)
	}
}

func TestACLUserRules(t *testing.T) {
	s := Start(t, Config{Users: []User{
		{Name: "alice", Password: "alice-pw", Rules: []string{"~app:*", "&*", "+@all", "-del"}},
		{Name: "bob", Password: "bob-pw"}, // no rules: may log in, may run nothing
	}})
	ctx := testContext(t)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ACL", "WHOAMI"}, "alice"},
		{[]string{"SET", "app:1", "x"}, "OK"},
		{[]string{"GET", "app:1"}, "x"},
	} {
		got, err := s.DoAs(ctx, "alice", "alice-pw", c.args...)
		if err != nil || got != c.want {
			t.Errorf("alice %v = %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	_, err := s.DoAs(ctx, "alice", "alice-pw", "DEL", "app:1")
	wantReplyError(t, "alice DEL (a denied command)", err, "NOPERM")
	_, err = s.DoAs(ctx, "alice", "alice-pw", "SET", "other:1", "x")
	wantReplyError(t, "alice SET other:1 (a denied key)", err, "NOPERM")
	_, err = s.DoAs(ctx, "bob", "bob-pw", "PING")
	wantReplyError(t, "bob PING", err, "NOPERM")

	// A failed AUTH must not run the command as the default user.
	msg, err := s.DoAs(ctx, "alice", "wrong", "SET", "app:2", "x")
	wantReplyError(t, "alice with a wrong password", err, "WRONGPASS")
	if !strings.HasPrefix(msg, "WRONGPASS") {
		t.Errorf("the text of an error reply is %q, want its message", msg)
	}
	if got := s.Do(t, "EXISTS", "app:2"); got != "0" {
		t.Errorf("a command after a failed AUTH ran: EXISTS app:2 = %q", got)
	}

	// The default user keeps every permission and no password.
	if got := s.Do(t, "DEL", "app:1"); got != "1" {
		t.Errorf("default DEL app:1 = %q, want 1", got)
	}
	if got := s.Do(t, "ACL", "WHOAMI"); got != "default" {
		t.Errorf("Do runs as %q, want default", got)
	}
}

func TestRequirePass(t *testing.T) {
	s := Start(t, Config{RequirePass: "s3cret"})
	ctx := testContext(t)

	if got := s.Do(t, "PING"); got != "PONG" {
		t.Fatalf("Do PING = %q: Do must authenticate", got)
	}
	_, err := roundTrip(ctx, s.Addr(), nil, []string{"GET", "k"})
	wantReplyError(t, "GET without AUTH", err, "NOAUTH")
	_, err = s.DoAs(ctx, "default", "wrong", "PING")
	wantReplyError(t, "AUTH with a wrong password", err, "WRONGPASS")
	if got, err := s.DoAs(ctx, "default", "s3cret", "PING"); err != nil || got != "PONG" {
		t.Errorf("DoAs default = %q, %v", got, err)
	}
	if v := s.Version(t); !strings.Contains(v, ".") {
		t.Errorf("Version() = %q", v)
	}

	// Restart reads the same ACL file.
	s.Kill(t)
	s.Restart(t)
	_, err = roundTrip(ctx, s.Addr(), nil, []string{"PING"})
	wantReplyError(t, "PING without AUTH after Restart", err, "NOAUTH")
	if got := s.Do(t, "PING"); got != "PONG" {
		t.Errorf("Do PING after Restart = %q", got)
	}
}

func TestCustomDefaultUser(t *testing.T) {
	s := Start(t, Config{Users: []User{
		{Name: "default", Rules: []string{"~*", "&*", "+@all", "-flushall"}},
	}})
	_, err := s.DoErr(testContext(t), "FLUSHALL")
	wantReplyError(t, "FLUSHALL by a default user without it", err, "NOPERM")
	acl, err := os.ReadFile(filepath.Join(s.Dir(), aclFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(acl), "user default "); n != 1 {
		t.Fatalf("ACL file has %d default users:\n%s", n, acl)
	}
}

func TestInvalidConfigFailsTheTest(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"password with a space", Config{Users: []User{{Name: "u", Password: "a b"}}}, "ACL file cannot hold"},
		{"rule with a newline", Config{Users: []User{{Name: "u", Rules: []string{"+@all\nuser evil on"}}}}, "ACL file cannot hold"},
		{"no name", Config{Users: []User{{Password: "p"}}}, "no Name"},
		{"default password twice", Config{RequirePass: "p", Users: []User{{Name: "default"}}}, "not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeTB(t)
			if s := Start(f, c.cfg); s != nil {
				t.Fatal("Start returned a server")
			}
			if msg := f.fatal(t); !strings.Contains(msg, c.want) {
				t.Fatalf("message %q lacks %q", msg, c.want)
			}
		})
	}
}
