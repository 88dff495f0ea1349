package emulator

import "testing"

const invalidateTK = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ntk\r\n"

// tracker opens a RESP3 connection tracking tk.
func tracker(t *testing.T, addr string) *rawClient {
	t.Helper()
	c := dialRaw(t, addr)
	c.value("HELLO", "3")
	if got := c.do("CLIENT", "TRACKING", "on"); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING on = %q", got)
	}
	if got := c.do("GET", "tk"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET tk = %q", got)
	}
	return c
}

// TestPushFramesPassThrough checks that an invalidation caused by another client
// reaches an idle tracking client through the emulator.
func TestPushFramesPassThrough(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv, e := startPair(t, p)
			srv.Do(t, "SET", "tk", "v")
			c := tracker(t, e.Addr())
			other := dialRaw(t, e.Addr())
			other.do("DEL", "tk")
			if got := c.read(); got != invalidateTK {
				t.Errorf("push = %q", got)
			}
			srv.Do(t, "SET", "tk", "v")
			c.do("GET", "tk")
			srv.Do(t, "SET", "tk", "x") // straight on the backend
			if got := c.read(); got != invalidateTK {
				t.Errorf("push = %q", got)
			}
		})
	}
}

// TestOwnWriteFrameOrder checks the table's tracking rows: a tracking client's own
// write of its tracked key gets the reply first, then the invalidation, for emulated
// commands too; a false condition sends no invalidation.
func TestOwnWriteFrameOrder(t *testing.T) {
	cases := []struct {
		profile Profile
		cmd     []string
		reply   string
	}{
		{Redis7, args("SET", "tk", "v2"), "+OK\r\n"},
		{Redis84, args("SET", "tk", "v2"), "+OK\r\n"},
		{Redis84, args("SET", "tk", "v2", "IFEQ", "v"), "+OK\r\n"},
		{Redis84, args("DELEX", "tk", "IFEQ", "v"), ":1\r\n"},
		{Valkey81, args("SET", "tk", "v2", "IFEQ", "v"), "+OK\r\n"},
		{Valkey90, args("SET", "tk", "v2", "IFEQ", "v"), "+OK\r\n"},
		{Valkey90, args("DELIFEQ", "tk", "v"), ":1\r\n"},
	}
	for _, c := range cases {
		t.Run(string(c.profile)+"/"+c.cmd[0]+"/"+c.cmd[len(c.cmd)-1], func(t *testing.T) {
			srv, e := startPair(t, c.profile)
			srv.Do(t, "SET", "tk", "v")
			tr := tracker(t, e.Addr())
			if got := tr.do(c.cmd...); got != c.reply {
				t.Fatalf("%q = %q, want %q", c.cmd, got, c.reply)
			}
			if got := tr.read(); got != invalidateTK {
				t.Errorf("after the reply: %q, want the invalidation", got)
			}
		})
	}
}

// TestFalseConditionNoInvalidation checks that a conditional op whose condition is
// false, by the tracker or by another client, sends no invalidation: the next frame
// the tracker reads is its PING's reply.
func TestFalseConditionNoInvalidation(t *testing.T) {
	cases := []struct {
		profile Profile
		cmd     []string
		reply   string
	}{
		{Redis84, args("SET", "tk", "v2", "IFEQ", "wrong"), "_\r\n"},
		{Redis84, args("DELEX", "tk", "IFEQ", "wrong"), ":0\r\n"},
		{Valkey81, args("SET", "tk", "v2", "IFEQ", "wrong"), "_\r\n"},
		{Valkey90, args("DELIFEQ", "tk", "wrong"), ":0\r\n"},
	}
	for _, c := range cases {
		t.Run(string(c.profile)+"/"+c.cmd[0], func(t *testing.T) {
			srv, e := startPair(t, c.profile)
			srv.Do(t, "SET", "tk", "v")
			tr := tracker(t, e.Addr())
			if got := tr.do(c.cmd...); got != c.reply {
				t.Fatalf("own %q = %q, want %q", c.cmd, got, c.reply)
			}
			other := dialRaw(t, e.Addr())
			other.value("HELLO", "3")
			if got := other.do(c.cmd...); got != c.reply {
				t.Fatalf("other's %q = %q, want %q", c.cmd, got, c.reply)
			}
			if got := tr.do("PING"); got != "+PONG\r\n" {
				t.Errorf("tracker's next frame = %q, want PING's reply", got)
			}
		})
	}
}

// TestRESP2RedirectTracking checks RESP2 tracking with REDIRECT: the invalidation
// arrives as a pub/sub message on the redirect connection, which the emulator
// forwards though no command asked for it, for an emulated write too.
func TestRESP2RedirectTracking(t *testing.T) {
	srv, e := startPair(t, Redis84)
	srv.Do(t, "SET", "tk", "v")
	sub := dialRaw(t, e.Addr())
	id := sub.clientID()
	if got := sub.do("SUBSCRIBE", "__redis__:invalidate"); got != "*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n" {
		t.Fatalf("SUBSCRIBE = %q", got)
	}
	tr := dialRaw(t, e.Addr())
	if got := tr.do("CLIENT", "TRACKING", "on", "REDIRECT", id); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING on REDIRECT = %q", got)
	}
	tr.do("GET", "tk")
	if got := tr.do("DELEX", "tk", "IFEQ", "v"); got != ":1\r\n" {
		t.Fatalf("DELEX = %q", got)
	}
	const msg = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\ntk\r\n"
	if got := sub.read(); got != msg {
		t.Errorf("redirected invalidation = %q, want %q", got, msg)
	}
	// In RESP2 subscribed mode an emulated command is refused explicitly.
	if got := sub.do("DELEX", "tk"); got != "-ERR emulator: 'delex' is not emulated on a RESP2 connection in subscribed mode\r\n" {
		t.Errorf("DELEX in subscribed mode = %q", got)
	}
	if got := sub.do("PING"); got != "*2\r\n$4\r\npong\r\n$0\r\n\r\n" {
		t.Errorf("PING in subscribed mode = %q", got)
	}
}
