package conn

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
)

func TestHandshakeFallbacks(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		helloErr  string
		script    func(f *fakeServer)
		wantProto int
		wantID    int64
	}{
		{
			name:     "unknown HELLO: AUTH with password only, SETNAME, CLIENT ID, SELECT",
			opts:     Options{Password: "pw", ClientName: "app", DB: 2},
			helloErr: "-ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'default' 'pw' 'SETNAME' 'app' \r\n",
			script: func(f *fakeServer) {
				f.Expect("AUTH", "pw")
				f.Reply("+OK\r\n")
				f.Expect("CLIENT", "SETNAME", "app")
				f.Reply("+OK\r\n")
				f.Expect("CLIENT", "ID")
				f.Reply(":7\r\n")
				f.Expect("SELECT", "2")
				f.Reply("+OK\r\n")
			},
			wantProto: 2,
			wantID:    7,
		},
		{
			// Redis 5.0 has no HELLO and quotes as Redis 6.x does.
			name:     "unknown HELLO in backticks: RESP2",
			helloErr: "-ERR unknown command `HELLO`, with args beginning with: `3`, \r\n",
			script: func(f *fakeServer) {
				f.Expect("CLIENT", "ID")
				f.Reply(":5\r\n")
			},
			wantProto: 2,
			wantID:    5,
		},
		{
			name:     "NOPROTO: AUTH with user",
			opts:     Options{Username: "u", Password: "pw"},
			helloErr: "-NOPROTO sorry, this protocol version is not supported.\r\n",
			script: func(f *fakeServer) {
				f.Expect("AUTH", "u", "pw")
				f.Reply("+OK\r\n")
				f.Expect("CLIENT", "ID")
				f.Reply(":9\r\n")
			},
			wantProto: 2,
			wantID:    9,
		},
		{
			name:     "CLIENT ID refused by ACL leaves the id unknown",
			helloErr: "-ERR unknown command 'HELLO', with args beginning with: '3' \r\n",
			script: func(f *fakeServer) {
				f.Expect("CLIENT", "ID")
				f.Reply("-NOPERM User u has no permissions to run the 'client|id' command\r\n")
			},
			wantProto: 2,
			wantID:    0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := dialFake(t, tt.opts, func(f *fakeServer) {
				f.Read() // HELLO with whatever arguments the options give
				f.Reply(tt.helloErr)
				tt.script(f)
			})
			if c.Protocol() != tt.wantProto {
				t.Errorf("protocol %d, want %d", c.Protocol(), tt.wantProto)
			}
			id, ok := c.ID()
			if id != tt.wantID || ok != (tt.wantID != 0) {
				t.Errorf("ID() = %d, %v; want %d", id, ok, tt.wantID)
			}
		})
	}
}

func TestHandshakeRESP3LearnsIdentity(t *testing.T) {
	c, _ := dialFake(t, Options{}, helloRESP3)
	if c.Protocol() != 3 {
		t.Errorf("protocol %d", c.Protocol())
	}
	if id, ok := c.ID(); id != 42 || !ok {
		t.Errorf("ID %d %v", id, ok)
	}
	if name, version := c.Server(); name != "redis" || version != "7.0.15" {
		t.Errorf("server %q %q", name, version)
	}
}

func (c *Conn) counts() (queued, inflight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.w.queued), c.r.inflight.len()
}

// A command cancelled while still queued is removed from the write buffer: the server
// never sees it, and the caller is told it was not sent.
func TestCancelQueuedCommandIsNeverSent(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx := context.Background()

	first := make(chan error, 1)
	go func() {
		v, err := c.Do(ctx, "GET", "a")
		if err == nil {
			if s, _ := v.Text(); s != "x" {
				err = errors.New("GET a got " + v.String())
			}
		}
		first <- err
	}()
	// The writer is now blocked writing GET a into the pipe nobody reads yet.
	testkit.WaitFor(t, "GET a in flight", func() bool { _, n := c.counts(); return n == 1 })

	cctx, cancel := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() {
		_, err := c.Do(cctx, "SET", "b", "never")
		second <- err
	}()
	testkit.WaitFor(t, "SET b queued", func() bool { q, _ := c.counts(); return q == 1 })
	cancel()
	err := <-second
	if !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("cancelled queued command: %v; want ErrNotSent and context.Canceled", err)
	}

	f.Expect("GET", "a")
	f.Reply("$1\r\nx\r\n")
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	pong := make(chan error, 1)
	go func() { pong <- c.Ping(ctx) }()
	f.Expect("PING") // not SET b: its bytes were removed
	f.Reply("+PONG\r\n")
	if err := <-pong; err != nil {
		t.Fatal(err)
	}
}

// A command cancelled after it was written reports an unknown outcome; its late reply
// is dropped and the next caller gets its own reply.
func TestCancelWrittenCommandDrainsItsReply(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	cctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := c.Do(cctx, "INCR", "n")
		res <- err
	}()
	f.Expect("INCR", "n")
	cancel()
	err := <-res
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotSent) {
		t.Fatalf("cancelled written command: %v; want ErrOutcomeUnknown and context.Canceled", err)
	}
	if !WasWritten(err) {
		t.Error("WasWritten = false")
	}

	got := make(chan resp.Value, 1)
	go func() {
		v, err := c.Do(context.Background(), "GET", "k")
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	f.Reply(":1\r\n") // INCR's orphaned reply
	f.Expect("GET", "k")
	f.Reply("$3\r\nnew\r\n")
	if v := <-got; v.String() != `"new"` {
		t.Fatalf("GET got %s; the orphaned reply leaked", v)
	}
}

func TestPushFramesGoToTheHandler(t *testing.T) {
	pushes := make(chan resp.Value, 4)
	c, f := dialFake(t, Options{PushHandler: func(v resp.Value) { pushes <- v }}, helloRESP3)
	res := make(chan resp.Value, 1)
	go func() {
		v, err := c.Do(context.Background(), "GET", "a")
		if err != nil {
			t.Error(err)
		}
		res <- v
	}()
	f.Expect("GET", "a")
	f.Reply(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n")
	f.Reply("$2\r\nv1\r\n")
	if v := <-res; v.String() != `"v1"` {
		t.Fatalf("GET got %s", v)
	}
	p := <-pushes
	if p.Kind() != resp.KindPush || p.Len() != 2 {
		t.Fatalf("push %s", p)
	}
}

func TestUnexpectedReplyBreaksTheConnection(t *testing.T) {
	// With a push handler the reader goroutine reads all the time: the stray reply is
	// seen at once.
	t.Run("always reading", func(t *testing.T) {
		c, f := dialFake(t, Options{PushHandler: func(resp.Value) {}}, helloRESP3)
		f.Reply("+OK\r\n")
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("connection not broken by a reply without request")
		}
		if !errors.Is(c.Err(), ErrUnexpectedReply) {
			t.Fatalf("Err() = %v", c.Err())
		}
		_, err := c.Do(context.Background(), "PING")
		if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnexpectedReply) {
			t.Fatalf("Do on a broken connection: %v", err)
		}
	})
	// Without one, nobody reads an idle connection; the next command peeks first and
	// never lets the stray reply pass for its own.
	t.Run("idle", func(t *testing.T) {
		c, f := dialFakeTCP(t, Options{}, helloRESP3)
		go c.Ping(context.Background())
		f.Expect("PING")
		f.Reply("+PONG\r\n")
		testkit.WaitFor(t, "PING done", func() bool { _, n := c.counts(); return n == 0 })
		f.Reply("+STRAY\r\n")
		time.Sleep(2 * idleCheckAfter) // the peek is for connections idle this long
		v, err := c.Do(context.Background(), "GET", "k")
		if !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnexpectedReply) {
			t.Fatalf("GET after a stray reply: %s, %v; want ErrNotSent and ErrUnexpectedReply", v, err)
		}
	})
	t.Run("closed while idle", func(t *testing.T) {
		c, f := dialFakeTCP(t, Options{}, helloRESP3)
		go c.Ping(context.Background())
		f.Expect("PING")
		f.Reply("+PONG\r\n")
		testkit.WaitFor(t, "PING done", func() bool { _, n := c.counts(); return n == 0 })
		f.Close()
		time.Sleep(2 * idleCheckAfter)
		_, err := c.Do(context.Background(), "SET", "k", "v")
		if !errors.Is(err, ErrNotSent) {
			t.Fatalf("SET on a connection the server closed while idle: %v; want ErrNotSent", err)
		}
	})
}

func TestBrokenTransportFailsEveryWaiter(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	const n = 5
	errs := make(chan error, n)
	cmds := make([][]any, n)
	for i := range cmds {
		cmds[i] = []any{"ECHO", i}
	}
	go func() {
		_, err := c.DoMulti(context.Background(), cmds...)
		errs <- err
	}()
	for i := range n {
		f.Expect("ECHO", string(rune('0'+i)))
	}
	f.Reply("$1\r\n0\r\n") // one of five replies, then the server goes away
	f.Close()
	err := <-errs
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("batch after transport loss: %v", err)
	}
	if c.Err() == nil {
		t.Fatal("connection still usable after transport loss")
	}
}

func TestBadArgumentsAreRejectedBeforeSending(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx := context.Background()
	tests := []struct {
		name string
		args []any
		want error
	}{
		{"empty command", nil, resp.ErrEmptyCommand},
		{"nil argument", []any{"SET", "k", nil}, resp.ErrInvalidArg},
		{"unsupported type", []any{"SET", "k", map[string]int{}}, resp.ErrInvalidArg},
		{"NaN float", []any{"ZADD", "k", math.NaN(), "m"}, resp.ErrInvalidArg},
	}
	for _, tt := range tests {
		if _, err := c.Do(ctx, tt.args...); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := c.DoMulti(ctx, []any{"PING"}, []any{"SET", struct{}{}}); !errors.Is(err, resp.ErrInvalidArg) {
		t.Errorf("DoMulti with a bad command: %v", err)
	}
	// Nothing was written: the next command is the first the server sees.
	go c.Ping(ctx)
	f.Expect("PING")
	f.Reply("+PONG\r\n")
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{{Protocol: 4}, {DB: -1}, {DialTimeout: -1}, {Username: "u"}} {
		if _, err := Dial(context.Background(), "127.0.0.1:1", o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// A non-blocking write long after a blocking one must not trip over the blocking
// write's expired deadline.
func TestNonBlockingWriteAfterOldDeadline(t *testing.T) {
	c, f := dialFakeTCP(t, Options{WriteTimeout: 20 * time.Millisecond}, helloRESP3)
	go c.Ping(context.Background()) // uncancellable: a blocking write with a deadline
	f.Expect("PING")
	f.Reply("+PONG\r\n")
	testkit.WaitFor(t, "PING done", func() bool { _, n := c.counts(); return n == 0 })
	time.Sleep(50 * time.Millisecond) // the write deadline is now in the past
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Do(ctx, "GET", "k"); done <- err }()
	f.Expect("GET", "k")
	f.Reply("$1\r\nv\r\n")
	if err := <-done; err != nil {
		t.Fatalf("GET after an expired write deadline: %v", err)
	}
}

// A cancellable caller that reads its own reply on a quiet connection still returns the
// moment its context ends, even with half a reply in the buffer; the reader goroutine
// takes over, drops the late reply, and the next caller gets its own.
func TestCancellableInlineReadIsInterrupted(t *testing.T) {
	for _, partial := range []string{"", "$5\r\nhel"} {
		c, f := dialFakeTCP(t, Options{ReadTimeout: -1}, helloRESP3)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() {
			_, err := c.Do(ctx, "GET", "slow")
			res <- err
		}()
		f.Expect("GET", "slow")
		if partial != "" {
			f.Reply(partial)
		}
		start := time.Now()
		cancel()
		select {
		case err := <-res:
			if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
				t.Fatalf("partial %q: %v", partial, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("partial %q: the cancelled caller is stuck in its read", partial)
		}
		t.Logf("partial %q: returned %v after cancel", partial, time.Since(start))
		f.Reply(strings.TrimPrefix("$5\r\nhello\r\n", partial))
		got := make(chan string, 1)
		go func() {
			v, err := c.Do(context.Background(), "GET", "next")
			if err != nil {
				t.Error(err)
			}
			got <- v.String()
		}()
		f.Expect("GET", "next")
		f.Reply("$4\r\nmine\r\n")
		if v := <-got; v != `"mine"` {
			t.Fatalf("partial %q: next caller got %s", partial, v)
		}
	}
}
