package emulator

import (
	"strconv"
	"testing"
)

// helloWant builds the exact HELLO reply of a server: the seven fields in the order
// the servers send them, as a RESP3 map or a RESP2 flat array.
func helloWant(proto int, server, version, id string, modules []string) string {
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	out := "*14\r\n"
	mod := "*"
	if proto == 3 {
		out = "%7\r\n"
		mod = "%"
	}
	out += bulk("server") + bulk(server) + bulk("version") + bulk(version) +
		bulk("proto") + ":" + strconv.Itoa(proto) + "\r\n" + bulk("id") + ":" + id + "\r\n" +
		bulk("mode") + bulk("standalone") + bulk("role") + bulk("master") + bulk("modules")
	out += "*" + strconv.Itoa(len(modules)) + "\r\n"
	for _, m := range modules {
		if proto == 3 {
			out += mod + "4\r\n"
		} else {
			out += mod + "8\r\n"
		}
		out += bulk("name") + bulk(m) + bulk("ver") + ":1\r\n" + bulk("path") + bulk("") + bulk("args") + "*0\r\n"
	}
	return out
}

// TestHelloFields checks HELLO's bytes per profile, under RESP3 and RESP2: server,
// version and modules are the profile's, id is the backend's CLIENT ID.
func TestHelloFields(t *testing.T) {
	srv := startBackend(t)
	identity := map[Profile]struct {
		server, version string
		modules         []string
	}{
		Redis60:  {"redis", "6.0.16", nil},
		Redis7:   {"redis", "7.0.15", nil},
		Redis84:  {"redis", "8.4.0", []string{"vectorset"}},
		Valkey81: {"valkey", "8.1.1", nil},
		Valkey90: {"valkey", "9.0.0", []string{"lua"}},
	}
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			e := Start(t, Config{Backend: srv.Addr(), Profile: p})
			want := identity[p]
			if p == Redis7 {
				want.version = srv.Version(t) // pass-through: the backend's own
			}
			for _, proto := range []int{3, 2} {
				c := dialRaw(t, e.Addr())
				id := c.clientID()
				got := c.do("HELLO", strconv.Itoa(proto))
				if w := helloWant(proto, want.server, want.version, id, want.modules); got != w {
					t.Errorf("HELLO %d\n got  %q\n want %q", proto, got, w)
				}
				// HELLO without a version answers in the protocol now in use (since
				// 6.2; Redis 6.0 needs the version).
				if p == Redis60 {
					if got2 := c.do("HELLO"); got2 != "-ERR wrong number of arguments for 'hello' command\r\n" {
						t.Errorf("HELLO without a version on 6.0 = %q", got2)
					}
				} else if got2 := c.do("HELLO"); got2 != got {
					t.Errorf("HELLO after HELLO %d\n got  %q\n want %q", proto, got2, got)
				}
				if id2 := c.clientID(); id2 != id {
					t.Errorf("CLIENT ID changed from %s to %s", id, id2)
				}
			}
		})
	}
}

// TestHelloAuth checks that HELLO … AUTH authenticates the backend connection as the
// user and that the emulator tracks that user for its NOPERM texts, and that a failed
// HELLO AUTH changes nothing.
func TestHelloAuth(t *testing.T) {
	_, e := startPair(t, Redis84)
	c := dialRaw(t, e.Addr())
	if got := c.do("HELLO", "3", "AUTH", "lim", "wrong"); got != "-WRONGPASS invalid username-password pair or user is disabled.\r\n" {
		t.Fatalf("HELLO with a wrong password = %q", got)
	}
	if got := c.do("SET", "k", "v", "IFEQ", "v"); got != "$-1\r\n" {
		t.Fatalf("still RESP2 as the default user: SET IFEQ on a missing key = %q", got)
	}
	if v := c.value("HELLO", "3", "AUTH", "lim", "lim-pw"); v.Kind().String() != "map" {
		t.Fatalf("HELLO 3 AUTH lim = %v", v)
	}
	if got := c.do("ACL", "WHOAMI"); got != "$3\r\nlim\r\n" {
		t.Fatalf("ACL WHOAMI = %q", got)
	}
	if got := c.do("DELEX", "k"); got != "-NOPERM User lim has no permissions to run the 'delex' command\r\n" {
		t.Errorf("DELEX as lim = %q", got)
	}
	if got := c.do("INCR", "k"); got != "-NOPERM User lim has no permissions to run the 'incr' command\r\n" {
		t.Errorf("INCR as lim = %q", got)
	}
	if got := c.do("SET", "k", "v", "IFEQ", "v"); got != "_\r\n" {
		t.Errorf("RESP3 SET IFEQ on a missing key = %q, want _", got)
	}
	// AUTH back to the default user (nopass accepts any password).
	if got := c.do("AUTH", "default", "x"); got != "+OK\r\n" {
		t.Fatalf("AUTH default = %q", got)
	}
	if got := c.do("DELEX", "k"); got != ":0\r\n" {
		t.Errorf("DELEX as default = %q", got)
	}
}
