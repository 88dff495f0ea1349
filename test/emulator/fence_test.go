package emulator

import (
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
)

// TestClientKillClosesClient checks that CLIENT KILL ID with the id a client sees
// (through the emulator or on the backend directly) closes that client's connection.
func TestClientKillClosesClient(t *testing.T) {
	for _, p := range Profiles {
		t.Run(string(p), func(t *testing.T) {
			srv, e := startPair(t, p)
			victim := dialRaw(t, e.Addr())
			id := victim.clientID()
			killer := dialRaw(t, e.Addr())
			if got := killer.do("CLIENT", "KILL", "ID", id); got != ":1\r\n" {
				t.Fatalf("CLIENT KILL ID %s through the emulator = %q", id, got)
			}
			victim.expectClosed()

			victim2 := dialRaw(t, e.Addr())
			id2 := victim2.clientID()
			if got := srv.Do(t, "CLIENT", "KILL", "ID", id2); got != "1" {
				t.Fatalf("CLIENT KILL ID %s on the backend = %q", id2, got)
			}
			victim2.expectClosed()
			if got := killer.do("PING"); got != "+PONG\r\n" {
				t.Errorf("the killer's own connection: PING = %q", got)
			}
			testkit.WaitFor(t, "only the killer's connection left", func() bool { return e.Conns() == 1 })
		})
	}
}

// TestDelayedCommandOnKilledConnection checks that a command held by Delay on a
// connection killed meanwhile never runs, emulated or forwarded, and is never
// answered.
func TestDelayedCommandOnKilledConnection(t *testing.T) {
	cases := []struct {
		profile Profile
		hook    string
		cmd     []string
	}{
		{Redis84, "SET IFEQ", args("SET", "lock", "v2", "IFEQ", "v", "PX", "30000")},
		{Redis84, "DELEX", args("DELEX", "lock", "IFEQ", "v")},
		{Valkey81, "SET", args("SET", "lock", "v2", "IFEQ", "v", "PX", "30000")},
		{Valkey90, "DELIFEQ", args("DELIFEQ", "lock", "v")},
		{Redis7, "SET", args("SET", "lock", "v2", "XX")},
		{Redis7, "EVAL", args("EVAL", "return redis.call('DEL', KEYS[1])", "1", "lock")},
	}
	for _, c := range cases {
		t.Run(string(c.profile)+"/"+c.hook, func(t *testing.T) {
			srv, e := startPair(t, c.profile)
			srv.Do(t, "SET", "lock", "v")
			e.Delay(c.hook, time.Hour) // the kill, not the clock, ends the wait
			victim := dialRaw(t, e.Addr())
			id := victim.clientID()
			victim.send(c.cmd...)
			testkit.WaitFor(t, "the command to be received", func() bool { return e.Count(c.hook) == 1 })
			srv.Do(t, "CLIENT", "KILL", "ID", id)
			victim.expectClosed()
			testkit.WaitFor(t, "the session to end", func() bool { return e.Conns() == 0 })
			if got := srv.Do(t, "GET", "lock"); got != "v" {
				t.Errorf("the key holds %q after the killed command: it ran", got)
			}
		})
	}
}

// TestBackendDeathClosesClients checks that clients are disconnected when the backend
// dies, including one waiting for a reply.
func TestBackendDeathClosesClients(t *testing.T) {
	srv, e := startPair(t, Redis84)
	idle := dialRaw(t, e.Addr())
	idle.do("PING")
	waiting := dialRaw(t, e.Addr())
	waiting.do("PING")
	waiting.send("BLPOP", "nothing", "0")
	testkit.WaitFor(t, "BLPOP to be received", func() bool { return e.Count("BLPOP") == 1 })
	srv.Kill(t)
	idle.expectClosed()
	waiting.expectClosed()
	testkit.WaitFor(t, "every session to end", func() bool { return e.Conns() == 0 })
}

// TestDropConn checks both DropConn modes for an emulated and a forwarded command:
// BeforeForward never runs the command, AfterForward runs it; neither answers.
func TestDropConn(t *testing.T) {
	cases := []struct {
		profile Profile
		hook    string
		cmd     []string
	}{
		{Redis84, "SET IFEQ", args("SET", "lock", "v2", "IFEQ", "v")},
		{Valkey90, "DELIFEQ", args("DELIFEQ", "lock", "v")},
		{Redis7, "SET", args("SET", "lock", "v2", "XX")},
	}
	for _, c := range cases {
		for _, when := range []DropWhen{BeforeForward, AfterForward} {
			t.Run(string(c.profile)+"/"+c.hook+"/"+when.String(), func(t *testing.T) {
				srv, e := startPair(t, c.profile)
				srv.Do(t, "SET", "lock", "v")
				e.DropConn(c.hook, when)
				victim := dialRaw(t, e.Addr())
				victim.send(c.cmd...)
				victim.expectClosed()
				testkit.WaitFor(t, "the session to end", func() bool { return e.Conns() == 0 })
				got, _ := srv.DoErr(testContext(t), "GET", "lock")
				if ran := got != "v"; ran != (when == AfterForward) {
					t.Errorf("the key holds %q: ran = %v with %v", got, ran, when)
				}
				// The drop was one-shot: the next connection works.
				c2 := dialRaw(t, e.Addr())
				srv.Do(t, "SET", "lock", "v")
				if got := c2.do(c.cmd...); got == "" {
					t.Errorf("second %q got nothing", c.cmd)
				}
			})
		}
	}
}
