package conn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// encodeAll encodes cmds back to back, as a pipeline that encodes as it goes does.
func encodeAll(t *testing.T, cmds ...[]any) []byte {
	t.Helper()
	var payload []byte
	for _, cmd := range cmds {
		var err error
		if payload, err = resp.AppendCommand(payload, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	return payload
}

// Batches started on two servers before either is waited for each get their own
// replies, in order, whichever is waited for first, whether the caller does the I/O
// itself (an uncancellable context) or leaves it to the goroutines; a second batch on
// one connection, started behind the first, follows it.
func TestStartEncodedOnSeveralServers(t *testing.T) {
	srvA := testserver.Start(t, testserver.Config{})
	srvB := testserver.Start(t, testserver.Config{})
	a, b := dialT(t, srvA.Addr(), Options{}), dialT(t, srvB.Addr(), Options{})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	tests := []struct {
		name        string
		ctx         context.Context
		reverseWait bool
	}{
		{"uncancellable, waited in start order", context.Background(), false},
		{"uncancellable, waited in reverse", context.Background(), true},
		{"cancellable, waited in start order", cancellable, false},
		{"cancellable, waited in reverse", cancellable, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprint("pending:", i)
			var pend [3]Pending
			var err error
			// a gets two batches, b one; the counters say which batch each reply is for.
			if pend[0], err = a.StartEncoded(tt.ctx, 2, encodeAll(t, []any{"SET", key, 10}, []any{"INCR", key}), nil); err != nil {
				t.Fatal(err)
			}
			if pend[1], err = b.StartEncoded(tt.ctx, 2, encodeAll(t, []any{"SET", key, 20}, []any{"INCRBY", key, 2}), nil); err != nil {
				t.Fatal(err)
			}
			if pend[2], err = a.StartEncoded(tt.ctx, 1, encodeAll(t, []any{"INCRBY", key, 5}), nil); err != nil {
				t.Fatal(err)
			}
			want := [3][]string{{`"OK"`, "11"}, {`"OK"`, "22"}, {"16"}}
			order := []int{0, 1, 2}
			if tt.reverseWait {
				order = []int{1, 0, 2} // batches on one connection in start order
			}
			for _, k := range order {
				res, err := pend[k].Wait()
				if err != nil {
					t.Fatalf("batch %d: %v", k, err)
				}
				if len(res) != len(want[k]) {
					t.Fatalf("batch %d: %d results, want %d", k, len(res), len(want[k]))
				}
				for j, r := range res {
					if got := r.Value.String(); r.Err != nil || got != want[k][j] {
						t.Errorf("batch %d result %d: %v %v, want %s", k, j, r.Value, r.Err, want[k][j])
					}
				}
			}
			for _, c := range []*Conn{a, b} {
				if err := c.Ping(context.Background()); err != nil {
					t.Fatalf("%s after the batches: %v", c.Addr(), err)
				}
			}
		})
	}
}

func TestPendingWaitedTwice(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	p, err := c.StartEncoded(context.Background(), 1, encodeAll(t, []any{"PING"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var zero Pending
	for name, q := range map[string]*Pending{"second Wait": &p, "zero Pending": &zero} {
		if _, err := q.Wait(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v; want ErrInvalidOptions", name, err)
		}
	}
	if _, err := c.StartEncoded(context.Background(), 0, encodeAll(t, []any{"PING"}), nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("StartEncoded of 0 commands: %v; want ErrInvalidOptions", err)
	}
}

// A context that ends between StartEncoded and Wait makes Wait return at once, saying
// whether the batch was sent; a written batch's late replies are dropped, and the next
// caller gets its own.
func TestPendingContextEndsBeforeWait(t *testing.T) {
	t.Run("written", func(t *testing.T) {
		c, f := dialFake(t, Options{}, helloRESP3)
		ctx, cancel := context.WithCancel(context.Background())
		results := make([]Result, 0, 2) // the caller's, reused after Wait
		p, err := c.StartEncoded(ctx, 2, encodeAll(t, []any{"INCR", "n"}, []any{"INCR", "n"}), results)
		if err != nil {
			t.Fatal(err)
		}
		f.Expect("INCR", "n")
		f.Expect("INCR", "n")
		f.Reply(":1\r\n") // one reply of two before the cancellation
		cancel()
		_, err = p.Wait()
		if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel: %v; want ErrOutcomeUnknown and context.Canceled", err)
		}
		reused := errors.New("reused by the caller")
		results = append(results[:0], Result{Err: reused}, Result{Err: reused})
		got := make(chan error, 1)
		go func() {
			v, err := c.Do(context.Background(), "GET", "k")
			if s, _ := v.Text(); err == nil && s != "own" {
				err = fmt.Errorf("GET got %s: a dropped reply leaked", v)
			}
			got <- err
		}()
		f.Reply(":2\r\n") // the abandoned batch's last reply
		f.Expect("GET", "k")
		f.Reply("$3\r\nown\r\n")
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			if r.Err != reused {
				t.Errorf("result %d of the abandoned batch written after Wait returned: %v %v", i, r.Value, r.Err)
			}
		}
	})
	t.Run("not sent", func(t *testing.T) {
		c, f := dialFake(t, Options{}, helloRESP3)
		first := make(chan error, 1)
		go func() {
			_, err := c.Do(context.Background(), "GET", "a")
			first <- err
		}()
		// The writer is now blocked writing GET a into the pipe nobody reads yet.
		testkit.WaitFor(t, "GET a in flight", func() bool { _, n := c.counts(); return n == 1 })
		ctx, cancel := context.WithCancel(context.Background())
		p, err := c.StartEncoded(ctx, 1, encodeAll(t, []any{"SET", "b", "never"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, err := p.Wait(); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel: %v; want ErrNotSent and context.Canceled", err)
		}
		f.Expect("GET", "a")
		f.Reply("$1\r\nx\r\n")
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		pong := make(chan error, 1)
		go func() { pong <- c.Ping(context.Background()) }()
		f.Expect("PING") // not SET b: its bytes were removed
		f.Reply("+PONG\r\n")
		if err := <-pong; err != nil {
			t.Fatal(err)
		}
	})
}

// A connection lost between StartEncoded and Wait fails the batch as of unknown
// outcome, whether the caller reads its replies itself or the reader goroutine does.
func TestPendingConnectionLostBeforeWait(t *testing.T) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tt := range []struct {
		name string
		ctx  context.Context
	}{
		{"uncancellable", context.Background()},
		{"cancellable", cancellable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeTCP(t, Options{}, helloRESP3)
			p, err := c.StartEncoded(tt.ctx, 2, encodeAll(t, []any{"ECHO", "0"}, []any{"ECHO", "1"}), nil)
			if err != nil {
				t.Fatal(err)
			}
			f.Expect("ECHO", "0")
			f.Expect("ECHO", "1")
			f.Reply("$1\r\n0\r\n") // one reply of two, then the server goes away
			f.Close()
			if p.cl.reader != readBySelf {
				// The reader goroutine notices the loss before Wait; a caller that
				// reads itself notices it in Wait.
				testkit.WaitFor(t, "the connection to break", func() bool { return c.Err() != nil })
			}
			if _, err := p.Wait(); !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("Wait after the connection was lost: %v; want ErrOutcomeUnknown", err)
			}
			if c.Err() == nil {
				t.Fatal("connection still usable after transport loss")
			}
		})
	}
}

// While a caller waits for its batch on one server, the batches it started on others
// hold up nobody: their replies, and other callers' behind them, are read without it.
// Before, the caller took the read role of each quiet connection it started a batch
// on, and another caller's PING on b waited until a's BLPOP had answered.
func TestStartEncodedHoldsUpNoOtherServer(t *testing.T) {
	srvA := testserver.Start(t, testserver.Config{})
	srvB := testserver.Start(t, testserver.Config{})
	a, b := dialT(t, srvA.Addr(), Options{}), dialT(t, srvB.Addr(), Options{})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cancellable} {
		pa, err := a.StartEncoded(ctx, 1, encodeAll(t, []any{"BLPOP", "pending:nothing", 3}), nil)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.StartEncoded(ctx, 1, encodeAll(t, []any{"PING"}), nil)
		if err != nil {
			t.Fatal(err)
		}
		// The BLPOP holds a's batch for 3 s; b's traffic must not wait for it.
		other, cancelOther := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := b.Do(other, "ECHO", "other")
		cancelOther()
		if s, _ := v.Text(); err != nil || s != "other" {
			t.Fatalf("another caller's command on b while a's batch waits: %v %v", v, err)
		}
		if res, err := pa.Wait(); err != nil || !res[0].Value.IsNull() {
			t.Fatalf("a's batch: %v %v", res, err)
		}
		if res, err := pb.Wait(); err != nil || res[0].Value.String() != `"PONG"` {
			t.Fatalf("b's batch: %v %v", res, err)
		}
	}
}

// A copy of a Pending waited after the original knows its call has moved on, rather
// than waiting on a call the connection has handed to somebody else.
func TestPendingCopyWaitedTwice(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	p, err := c.StartEncoded(context.Background(), 1, encodeAll(t, []any{"PING"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := p
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(context.Background(), "PING"); err != nil { // reuses the pooled call
		t.Fatal(err)
	}
	if _, err := cp.Wait(); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Wait on a copy after the original's: %v; want ErrInvalidOptions", err)
	}
}
