package conn

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"testing"
	"testing/synctest"
)

// bubbleChild names the environment variable under which TestCallsStayInTheirBubble
// runs its scenario, in a test binary of its own: the runtime's error for a channel
// used outside its bubble is fatal, not a panic a test could recover.
const bubbleChild = "RESPIRE_CONN_BUBBLE_CHILD"

// TestCallsStayInTheirBubble: a connection dialled in a testing/synctest bubble
// recycles its calls through a pool of its own, so a call (and its done channel, which
// belongs to the bubble) is never handed to a connection outside the bubble: the lock
// and router tests run connections in bubbles.
func TestCallsStayInTheirBubble(t *testing.T) {
	if os.Getenv(bubbleChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCallsStayInTheirBubble$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), bubbleChild+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("a call of a bubble's connection served one outside it: %v\n%s", err, out)
		}
		return
	}
	// One P: the call a connection puts back is the next one got, whoever gets it.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	get := func(c *Conn, f *fakeServer) {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, err := c.Do(context.Background(), "GET", "k"); done <- err }()
		f.Expect("GET", "k")
		f.Reply("$1\r\nv\r\n")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		c, f := dialFake(t, Options{}, helloRESP3)
		get(c, f)
		c.Close()
	})
	c, f := dialFake(t, Options{}, helloRESP3)
	get(c, f)
}

// TestCallsShared: a connection dialled outside a bubble recycles its calls through the
// pool every such connection shares (a pool per connection costs memory after every
// collection); one dialled inside a bubble keeps its own.
func TestCallsShared(t *testing.T) {
	outside, _ := dialFake(t, Options{}, helloRESP3)
	if outside.calls != &sharedCalls {
		t.Error("a connection dialled outside any bubble has a pool of its own")
	}
	synctest.Test(t, func(t *testing.T) {
		a, _ := dialFake(t, Options{}, helloRESP3)
		b, _ := dialFake(t, Options{}, helloRESP3)
		if a.calls == &sharedCalls || a.calls == b.calls {
			t.Error("connections dialled in a bubble share a pool")
		}
		a.Close()
		b.Close()
	})
}

// TestCallFields holds a call, which every request takes, to 18 fields: what only
// re-authentication and transaction following need lives in a record of its own
// (follow).
func TestCallFields(t *testing.T) {
	if n := reflect.TypeFor[call]().NumField(); n > 18 {
		t.Errorf("call has %d fields, want at most 18", n)
	}
}

// TestFollowOnlyWhereUsed: on a connection that follows transactions, a request gets
// a record at its first transaction command, and not before.
func TestFollowOnlyWhereUsed(t *testing.T) {
	c := &Conn{}
	cl := &call{want: 3}
	c.followLocked(cl, 0, verbOf([]any{"GET", "k"}))
	c.followLocked(cl, 1, verbOf([]any{"AUTH", "u", "p"}))
	if cl.follow != nil {
		t.Fatal("a request without transaction commands got a record")
	}
	c.followLocked(cl, 2, verbOf([]any{"MULTI"}))
	if cl.effect() != txOpens {
		t.Fatalf("effect %d after MULTI, want txOpens", cl.effect())
	}
}
