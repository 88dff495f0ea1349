package emulator

import "testing"

// TestMultiEmulated checks emulated commands inside MULTI: QUEUED, then run in order
// at EXEC with the real commands' replies.
func TestMultiEmulated(t *testing.T) {
	for _, c := range []struct {
		profile Profile
		cmds    [][]string
		exec    string
	}{
		{Redis84, [][]string{
			args("SET", "k", "v2", "IFEQ", "v", "PX", "30000"),
			args("SET", "k", "v3", "IFEQ", "nomatch"),
			args("DELEX", "k", "IFEQ", "v2"),
			args("GET", "k"),
			args("SET", "k", "v", "IFEQ", "v", "EX", "0"),
		}, "*5\r\n+OK\r\n$-1\r\n:1\r\n$-1\r\n-ERR invalid expire time in 'set' command\r\n"},
		{Valkey90, [][]string{
			args("SET", "k", "v2", "IFEQ", "v"),
			args("DELIFEQ", "k", "v"),
			args("DELIFEQ", "k", "v2"),
			args("SET", "k", "v", "IFEQ", "v", "NX"),
		}, "*4\r\n+OK\r\n:0\r\n:1\r\n-ERR syntax error\r\n"},
	} {
		t.Run(string(c.profile), func(t *testing.T) {
			srv, e := startPair(t, c.profile)
			srv.Do(t, "SET", "k", "v")
			cl := dialRaw(t, e.Addr())
			if got := cl.do("MULTI"); got != "+OK\r\n" {
				t.Fatalf("MULTI = %q", got)
			}
			for _, cmd := range c.cmds {
				if got := cl.do(cmd...); got != "+QUEUED\r\n" {
					t.Fatalf("%q = %q, want +QUEUED", cmd, got)
				}
			}
			if got := cl.do("EXEC"); got != c.exec {
				t.Errorf("EXEC\n got  %q\n want %q", got, c.exec)
			}
		})
	}
}

// TestMultiQueueTimeErrors checks that an emulated command refused at queue time
// (NOPERM, arity, or EVAL refused for a user without it) makes EXEC abort, and that
// nothing of the transaction runs.
func TestMultiQueueTimeErrors(t *testing.T) {
	for _, c := range []struct {
		name, user string
		cmd        []string
		reply      string
	}{
		{"noperm", "lim", args("DELEX", "k", "IFEQ", "v"), "-NOPERM User lim has no permissions to run the 'delex' command\r\n"},
		{"arity", "", args("DELEX"), "-ERR wrong number of arguments for 'delex' command\r\n"},
		{"no eval", "noeval", args("DELEX", "k", "IFEQ", "v"), "-ERR emulator: 'delex' inside MULTI is queued as EVAL, which the backend refused: NOPERM this user has no permissions to run the 'eval' command\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, e := startPair(t, Redis84)
			srv.Do(t, "SET", "k", "v")
			cl := dialAs(t, e.Addr(), c.user)
			cl.do("MULTI")
			if got := cl.do("SET", "other", "x"); got != "+QUEUED\r\n" {
				t.Fatalf("SET other = %q", got)
			}
			if got := cl.do(c.cmd...); got != c.reply {
				t.Errorf("%q = %q, want %q", c.cmd, got, c.reply)
			}
			if got := cl.do("EXEC"); got != "-EXECABORT Transaction discarded because of previous errors.\r\n" {
				t.Errorf("EXEC = %q", got)
			}
			if got := srv.Do(t, "EXISTS", "other"); got != "0" {
				t.Errorf("an aborted transaction ran: EXISTS other = %s", got)
			}
			if got := cl.do("PING"); got != "+PONG\r\n" {
				t.Errorf("after EXECABORT: PING = %q", got)
			}
		})
	}
}

// TestNullEncoding checks that an emulated null is $-1 under RESP2 and _ under RESP3.
func TestNullEncoding(t *testing.T) {
	for _, p := range []Profile{Redis84, Valkey81, Valkey90} {
		t.Run(string(p), func(t *testing.T) {
			srv, e := startPair(t, p)
			srv.Do(t, "SET", "k", "v")
			c := dialRaw(t, e.Addr())
			if got := c.do("SET", "k", "v2", "IFEQ", "wrong", "PX", "30000"); got != "$-1\r\n" {
				t.Errorf("RESP2 mismatch = %q", got)
			}
			if got := c.do("SET", "missing", "v", "IFEQ", "v", "GET"); got != "$-1\r\n" {
				t.Errorf("RESP2 missing with GET = %q", got)
			}
			c.value("HELLO", "3")
			if got := c.do("SET", "k", "v2", "IFEQ", "wrong", "PX", "30000"); got != "_\r\n" {
				t.Errorf("RESP3 mismatch = %q", got)
			}
			if got := c.do("SET", "missing", "v", "IFEQ", "v", "GET"); got != "_\r\n" {
				t.Errorf("RESP3 missing with GET = %q", got)
			}
			c.value("HELLO", "2")
			if got := c.do("SET", "k", "v2", "IFEQ", "wrong"); got != "$-1\r\n" {
				t.Errorf("RESP2 again = %q", got)
			}
		})
	}
}

// TestSelectAndPipeline checks that emulated commands act on the database the client
// selected, and that pipelined commands, emulated and forwarded, are answered in order.
func TestSelectAndPipeline(t *testing.T) {
	srv, e := startPair(t, Redis84)
	c := dialRaw(t, e.Addr())
	c.do("SELECT", "3")
	cmds := [][]string{
		args("SET", "k", "v", "NX"),
		args("SET", "k", "v2", "IFEQ", "v"),
		args("GET", "k"),
		args("SET", "k", "v3", "IFEQ", "nomatch", "GET"),
		args("DELEX", "k", "IFNE", "v2"),
		args("DELEX", "k", "IFEQ", "v2"),
		args("EXISTS", "k"),
	}
	want := []string{"+OK\r\n", "+OK\r\n", "$2\r\nv2\r\n", "$2\r\nv2\r\n", ":0\r\n", ":1\r\n", ":0\r\n"}
	for _, cmd := range cmds {
		c.send(cmd...)
	}
	for i, w := range want {
		if got := c.read(); got != w {
			t.Errorf("%q = %q, want %q", cmds[i], got, w)
		}
	}
	c.do("SET", "k", "in-db-3")
	if got := srv.Do(t, "EXISTS", "k"); got != "0" {
		t.Errorf("db 0 has k")
	}
	other := dialRaw(t, e.Addr())
	other.do("SELECT", "3")
	if got := other.do("GET", "k"); got != "$7\r\nin-db-3\r\n" {
		t.Errorf("GET k in db 3 = %q", got)
	}
}

// TestSetParsing checks the SET options the table does not cover: expiry errors,
// KEEPTTL, and IFNE on Redis 8.4.
func TestSetParsing(t *testing.T) {
	srv, e := startPair(t, Redis84)
	c := dialRaw(t, e.Addr())
	srv.Do(t, "SET", "k", "v", "PX", "30000")
	for _, s := range []struct {
		cmd  []string
		want string
	}{
		{args("SET", "k", "v", "IFEQ", "v", "PX", "0"), "-ERR invalid expire time in 'set' command\r\n"},
		{args("SET", "k", "v", "IFEQ", "v", "PX", "abc"), "-ERR value is not an integer or out of range\r\n"},
		{args("SET", "k", "v", "IFEQ", "v", "PX", "01"), "-ERR value is not an integer or out of range\r\n"},
		{args("SET", "k", "v", "IFEQ", "v", "EX", "9223372036854775807"), "-ERR invalid expire time in 'set' command\r\n"},
		{args("SET", "k", "v", "IFEQ", "v", "KEEPTTL", "PX", "1"), "-ERR syntax error\r\n"},
		{args("SET", "k", "v", "IFEQ", "v", "PX", "1", "EX", "1"), "-ERR syntax error\r\n"},
		{args("SET", "k", "v", "XX", "IFEQ", "v"), "-ERR syntax error\r\n"},
		{args("SET", "k", "v", "IFDEQ", "f7042be43fb80714"), "-ERR emulator: SET IFDEQ (digest conditions) is not emulated\r\n"},
		{args("SET", "k", "v2", "ifeq", "v", "keepttl"), "+OK\r\n"},
		{args("PTTL", "k"), ""}, // checked below: kept
		{args("SET", "new", "n", "IFNE", "x"), "+OK\r\n"},
		{args("SET", "new", "n2", "IFNE", "n"), "$-1\r\n"},
		{args("SET", "new", "n2", "IFNE", "x", "GET"), "$1\r\nn\r\n"},
		{args("SET", "k", "v", "EX", "IFEQ"), "-ERR value is not an integer or out of range\r\n"},
	} {
		got := c.do(s.cmd...)
		if s.want == "" {
			if !ttlClose(got, ":30000\r\n") {
				t.Errorf("%q = %q, want the TTL kept", s.cmd, got)
			}
			continue
		}
		if got != s.want {
			t.Errorf("%q = %q, want %q", s.cmd, got, s.want)
		}
	}
}

// TestParseRedisInt checks the strict integer parsing of expiry arguments.
func TestParseRedisInt(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "1": 1, "-1": -1, "30000": 30000,
		"9223372036854775807": 9223372036854775807, "-9223372036854775808": -9223372036854775808} {
		if n, ok := parseRedisInt(s); !ok || n != want {
			t.Errorf("parseRedisInt(%q) = %d, %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "1.5", "9223372036854775808", "-9223372036854775809", "99999999999999999999"} {
		if n, ok := parseRedisInt(s); ok {
			t.Errorf("parseRedisInt(%q) = %d, want an error", s, n)
		}
	}
}

// TestSelectInsideMulti checks that a SELECT run by EXEC moves later emulated
// commands to that database.
func TestSelectInsideMulti(t *testing.T) {
	srv, e := startPair(t, Valkey90)
	c := dialRaw(t, e.Addr())
	c.do("MULTI")
	c.do("SET", "k", "v0")
	c.do("SELECT", "5")
	c.do("SET", "k", "v5")
	if got := c.do("EXEC"); got != "*3\r\n+OK\r\n+OK\r\n+OK\r\n" {
		t.Fatalf("EXEC = %q", got)
	}
	if got := c.do("DELIFEQ", "k", "v5"); got != ":1\r\n" {
		t.Errorf("DELIFEQ in db 5 = %q", got)
	}
	if got := srv.Do(t, "GET", "k"); got != "v0" {
		t.Errorf("db 0's k = %q", got)
	}
}
