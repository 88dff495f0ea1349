package conn

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/testserver"
)

// Commands started on two servers before either reply is collected each get their own
// reply, with the key prefix applied, whichever is collected first; Reply, like Wait,
// collects once, and neither half collects the other's kind.
func TestStartWithOnSeveralServers(t *testing.T) {
	srvA := testserver.Start(t, testserver.Config{})
	srvB := testserver.Start(t, testserver.Config{})
	a, b := dialT(t, srvA.Addr(), Options{}), dialT(t, srvB.Addr(), Options{})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := CallOptions{KeyPrefix: "p:", Keys: []int{1}, Deadline: time.Now().Add(time.Minute)}
	round := 0
	for _, ctx := range []context.Context{context.Background(), cancellable} {
		for _, o := range []CallOptions{o, {KeyPrefix: o.KeyPrefix, Keys: o.Keys}} {
			round++
			pa, err := a.StartWith(ctx, o, "INCRBY", "n", 1)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := b.StartWith(ctx, o, "INCRBY", "n", 10)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pb.Wait(); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("Wait on a command StartWith started: %v; want ErrInvalidOptions", err)
			}
			vb, err := pb.Reply()
			if n, _ := vb.Int(); err != nil || n != int64(10*round) {
				t.Fatalf("b: %v %v", vb, err)
			}
			va, err := pa.Reply()
			if n, _ := va.Int(); err != nil || n != int64(round) {
				t.Fatalf("a: %v %v", va, err)
			}
			if _, err := pa.Reply(); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("a second Reply: %v; want ErrInvalidOptions", err)
			}
		}
	}
	if got := srvA.Do(t, "GET", "p:n"); got != "4" {
		t.Errorf("p:n on a is %q, want 4: the prefix was not applied", got)
	}
	pe, err := a.StartEncoded(context.Background(), 1, encodeAll(t, []any{"PING"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pe.Reply(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Reply on a batch: %v; want ErrInvalidOptions", err)
	}
	if _, err := pe.Wait(); err != nil {
		t.Fatal(err)
	}
}

// A command whose deadline passes between StartWith and Reply fails, once Reply is
// called, as written and timed out; its late reply is dropped and the connection's
// next caller gets its own. One whose deadline passed before it started is not sent.
func TestStartWithDeadlinePassesBeforeReply(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	if _, err := c.StartWith(context.Background(), CallOptions{Deadline: time.Now()}, "SET", "k", "late"); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StartWith past its deadline: %v; want not sent, deadline exceeded", err)
	}
	srv.Do(t, "CLIENT", "PAUSE", "60000", "WRITE") // the SET waits on the server
	t.Cleanup(func() { srv.Do(t, "CLIENT", "UNPAUSE") })
	by := time.Now().Add(50 * time.Millisecond)
	p, err := c.StartWith(context.Background(), CallOptions{Deadline: by}, "SET", "k", "late")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the deadline to pass", func() bool { return !time.Now().Before(by) })
	if _, err := p.Reply(); !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reply after the deadline: %v; want unknown outcome, deadline exceeded", err)
	}
	srv.Do(t, "CLIENT", "UNPAUSE")
	v, err := c.Do(context.Background(), "GET", "k")
	if s, _ := v.Text(); err != nil || s != "late" {
		t.Fatalf("GET after the abandoned SET: %v %v; want late", v, err)
	}
}

// A connection killed between StartWith and Reply fails the command as of unknown
// outcome.
func TestStartWithConnectionLostBeforeReply(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	srv.Do(t, "CLIENT", "PAUSE", "60000", "WRITE")
	t.Cleanup(func() { srv.Do(t, "CLIENT", "UNPAUSE") })
	id, ok := c.ID()
	if !ok {
		t.Fatal("no CLIENT ID")
	}
	p, err := c.StartWith(context.Background(), CallOptions{Deadline: time.Now().Add(time.Minute)}, "SET", "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "CLIENT", "KILL", "ID", strconv.FormatInt(id, 10))
	if _, err := p.Reply(); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Reply after the connection was killed: %v; want ErrOutcomeUnknown", err)
	}
	if c.Err() == nil {
		t.Fatal("connection still usable after it was killed")
	}
}
