package emulator

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/respire/respire/test/testserver"
)

// TestAdminCredentials checks an emulator whose backend requires a password: the
// admin connection authenticates with Config's credentials, an unauthenticated
// client gets NOAUTH for emulated commands as for any other, and an authenticated one
// is served.
func TestAdminCredentials(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{RequirePass: "s3cret", Users: []testserver.User{
		{Name: "ops", Password: "ops-pw", Rules: []string{"~*", "&*", "+@all"}},
	}})
	srv.Do(t, "SET", "k", "v")
	e := Start(t, Config{Backend: srv.Addr(), Profile: Valkey90, AdminUser: "ops", AdminPassword: "ops-pw"})
	c := dialRaw(t, e.Addr())
	for _, cmd := range [][]string{args("DELIFEQ", "k", "v"), args("SET", "k", "v", "IFEQ", "v"), args("GET", "k")} {
		if got := c.do(cmd...); !strings.HasPrefix(got, "-NOAUTH ") {
			t.Errorf("%q before AUTH = %q, want NOAUTH", cmd, got)
		}
	}
	if got := c.do("DELIFEQ", "k", "v"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("emulated command before AUTH = %q", got)
	}
	if got := c.do("DELIFEQ"); got != "-ERR wrong number of arguments for 'delifeq' command\r\n" {
		t.Errorf("arity is checked before authentication: %q", got)
	}
	if got := c.do("AUTH", "s3cret"); got != "+OK\r\n" {
		t.Fatalf("AUTH = %q", got)
	}
	if got := c.do("DELIFEQ", "k", "v"); got != ":1\r\n" {
		t.Errorf("DELIFEQ after AUTH = %q", got)
	}
	// The admin connection survives being killed: the next emulated command redials.
	srv.Do(t, "CLIENT", "KILL", "USER", "ops")
	if got := c.do("DELIFEQ", "k", "v"); got != ":0\r\n" {
		t.Errorf("DELIFEQ after the admin connection was killed = %q", got)
	}
}

// TestStartFailures checks that Start fails the test on a bad configuration.
func TestStartFailures(t *testing.T) {
	srv := startBackend(t)
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown profile", Config{Backend: srv.Addr(), Profile: "redis-9"}, "unknown profile"},
		{"no backend", Config{Profile: Redis84}, "Backend is empty"},
		{"wrong admin password", Config{Backend: srv.Addr(), AdminUser: "lim", AdminPassword: "nope"}, "WRONGPASS"},
		{"backend down", Config{Backend: "127.0.0.1:" + itoa(int64(testserver.FreePort(t)))}, "connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeTB{TB: t}
			if e := Start(f, c.cfg); e != nil {
				t.Fatal("Start returned an emulator")
			}
			if !strings.Contains(f.msg, c.want) {
				t.Errorf("Fatalf message %q lacks %q", f.msg, c.want)
			}
		})
	}
}

// fakeTB records Fatalf instead of stopping the test.
type fakeTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msg += strings.TrimSpace(fmt.Sprintf(format, args...))
}
