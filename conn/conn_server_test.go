package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var protocols = []int{2, 3}

func dialT(t *testing.T, addr string, opts Options) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), addr, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialRealServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{
		Users: []testserver.User{{Name: "app", Password: "secret", Rules: []string{"+@all", "~*"}}},
	})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{Protocol: proto, Username: "app", Password: "secret", ClientName: "respire-test", DB: 3})
			ctx := context.Background()
			if c.Protocol() != proto {
				t.Errorf("protocol %d", c.Protocol())
			}
			id, ok := c.ID()
			v, err := c.Do(ctx, "CLIENT", "ID")
			if err != nil {
				t.Fatal(err)
			}
			if real, _ := v.Int(); !ok || real != id {
				t.Errorf("ID() = %d, %v; server says %d", id, ok, real)
			}
			if name, version := c.Server(); name != "redis" || version != srv.Version(t) {
				t.Errorf("Server() = %q %q; want redis %s", name, version, srv.Version(t))
			}
			if v, _ := c.Do(ctx, "CLIENT", "GETNAME"); v.String() != `"respire-test"` {
				t.Errorf("client name %s", v)
			}
			if _, err := c.Do(ctx, "SET", "in-db-3", "yes"); err != nil {
				t.Fatal(err)
			}
			if info := srv.Do(t, "CLIENT", "LIST", "ID", strconv.FormatInt(id, 10)); !strings.Contains(info, " db=3 ") || !strings.Contains(info, "name=respire-test ") {
				t.Errorf("server sees the client as %q; want db=3 and the name", info)
			}
			if v, _ := c.Do(ctx, "ACL", "WHOAMI"); v.String() != `"app"` {
				t.Errorf("ACL WHOAMI %s", v)
			}
		})
	}
}

func TestDialWrongPassword(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{RequirePass: "right"})
	for _, proto := range protocols {
		_, err := Dial(context.Background(), srv.Addr(), Options{Protocol: proto, Password: "wrong"})
		if !resp.HasCode(err, "WRONGPASS") {
			t.Errorf("RESP%d wrong password: %v", proto, err)
		}
	}
}

func TestTLS(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{TLS: true})
	c := dialT(t, srv.TLSAddr(), Options{TLS: srv.ClientTLSConfig()})
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Every reply type a real server produces decodes to what the server meant.
func TestReplyTypesFromRealServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{Protocol: proto})
			ctx := context.Background()
			must := func(args ...any) resp.Value {
				t.Helper()
				v, err := c.Do(ctx, args...)
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				return v
			}
			must("DEL", "h", "z", "s", "str")
			must("HSET", "h", "f1", "v1", "f2", "v2")
			must("ZADD", "z", "1.5", "m")
			must("SADD", "s", "a")
			must("SET", "str", "hello")

			if v := must("PING"); v.Kind() != resp.KindSimpleString {
				t.Errorf("PING kind %s", v.Kind())
			}
			if v := must("GET", "str"); v.Kind() != resp.KindBulkString {
				t.Errorf("GET kind %s", v.Kind())
			}
			if v := must("GET", "missing"); !v.IsNull() {
				t.Errorf("GET missing %s", v)
			}
			if n, _ := must("INCR", "counter-"+strconv.Itoa(proto)).Int(); n != 1 {
				t.Errorf("INCR %d", n)
			}
			m, err := must("HGETALL", "h").Map()
			if err != nil || m["f1"].String() != `"v1"` || m["f2"].String() != `"v2"` {
				t.Errorf("HGETALL %v %v", m, err)
			}
			wantMap := map[int]resp.Kind{2: resp.KindArray, 3: resp.KindMap}[proto]
			if k := must("HGETALL", "h").Kind(); k != wantMap {
				t.Errorf("HGETALL kind %s, want %s", k, wantMap)
			}
			if f, _ := must("ZSCORE", "z", "m").Float(); f != 1.5 {
				t.Errorf("ZSCORE %v", f)
			}
			wantSet := map[int]resp.Kind{2: resp.KindArray, 3: resp.KindSet}[proto]
			if k := must("SMEMBERS", "s").Kind(); k != wantSet {
				t.Errorf("SMEMBERS kind %s", k)
			}
			if proto == 3 {
				if k := must("ZSCORE", "z", "m").Kind(); k != resp.KindDouble {
					t.Errorf("RESP3 ZSCORE kind %s", k)
				}
				if k := must("EVAL", "return redis.setresp(3) or {double=1.5}", 0).Kind(); k != resp.KindDouble {
					t.Errorf("Lua double kind %s", k)
				}
				if v := must("EVAL", "redis.setresp(3); return {big_number='123456789012345678901234567890'}", 0); v.Kind() != resp.KindBigNumber {
					t.Errorf("big number %s", v)
				}
				if v := must("EVAL", "redis.setresp(3); return true", 0); v.Kind() != resp.KindBoolean {
					t.Errorf("boolean %s", v)
				}
				if v := must("EVAL", "redis.setresp(3); return nil", 0); !v.IsNull() {
					t.Errorf("null %s", v)
				}
				if v := must("CLIENT", "INFO"); v.Kind() != resp.KindVerbatim || v.VerbatimFormat() != "txt" {
					t.Errorf("CLIENT INFO %s %s", v.Kind(), v.VerbatimFormat())
				}
			}
			if v := must("EVAL", "return {1, 'two', {3}}", 0); v.String() != `[1, "two", [3]]` {
				t.Errorf("nested array %s", v)
			}
			_, err = c.Do(ctx, "LPUSH", "str", "x")
			var se *resp.ServerError
			if !errors.As(err, &se) || se.Code != "WRONGTYPE" {
				t.Errorf("WRONGTYPE: %v", err)
			}
			res, err := c.DoMulti(ctx, []any{"SET", "p", "1"}, []any{"LPUSH", "p", "x"}, []any{"GET", "p"})
			if err != nil || len(res) != 3 || res[0].Err != nil || !resp.HasCode(res[1].Err, "WRONGTYPE") || res[2].Value.String() != `"1"` {
				t.Errorf("DoMulti %v %v", res, err)
			}
		})
	}
}

// DEBUG PROTOCOL makes the server send each RESP3 type it can produce, attributes and
// pushes included; under RESP2 it sends their RESP2 forms.
func TestEveryTypeTheServerProduces(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Args: []string{"--enable-debug-command", "yes"}})
	want := map[int]map[string]string{
		3: {
			"string": `"Hello World"`, "integer": "12345", "double": "3.141", "bignum": "(big) 1234567999999999999999999999999999999",
			"null": "(nil)", "array": "[0, 1, 2]", "set": "~{0, 1, 2}", "map": "{0: false, 1: true, 2: false}",
			"attrib": `"Some real reply following the attribute"`, "verbatim": `"txt:This is a verbatim\nstring"`,
			"true": "true", "false": "false",
		},
		2: {
			"string": `"Hello World"`, "integer": "12345", "double": `"3.141"`, "bignum": `"1234567999999999999999999999999999999"`,
			"null": "(nil)", "array": "[0, 1, 2]", "set": "[0, 1, 2]", "map": "[0, 0, 1, 1, 2, 0]",
			"attrib": `"Some real reply following the attribute"`, "verbatim": `"This is a verbatim\nstring"`,
			"true": "1", "false": "0",
		},
	}
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			pushes := make(chan resp.Value, 1)
			c := dialT(t, srv.Addr(), Options{Protocol: proto, PushHandler: func(v resp.Value) { pushes <- v }})
			for typ, w := range want[proto] {
				v, err := c.Do(context.Background(), "DEBUG", "PROTOCOL", typ)
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if v.String() != w {
					t.Errorf("DEBUG PROTOCOL %s = %s (%s), want %s", typ, v, v.Kind(), w)
				}
				if typ == "attrib" && proto == 3 {
					if a := v.Attributes(); len(a) != 2 || a[0].String() != `"key-popularity"` {
						t.Errorf("attributes %v", a)
					}
				}
			}
			if proto == 3 {
				v, err := c.Do(context.Background(), "DEBUG", "PROTOCOL", "push")
				if err != nil || v.String() != `"Some real reply following the push reply"` {
					t.Fatalf("push: %s %v", v, err)
				}
				if p := <-pushes; p.Kind() != resp.KindPush || !strings.Contains(p.String(), "server-cpu-usage") {
					t.Errorf("push frame %s", p)
				}
			}
		})
	}
}

// 1,000 concurrent callers with random cancellations share one connection: every reply
// that arrives is its own request's, nothing hangs, and the connection stays in sync.
func TestConcurrentCallersWithRandomCancellation(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{Protocol: proto})
			var wrong, ok, notSent, unknown atomic.Int64
			var wg sync.WaitGroup
			for i := range 1000 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(i), 7))
					for j := range 20 {
						payload := fmt.Sprintf("caller-%d-%d-%s", i, j, strings.Repeat("x", rng.IntN(200)))
						// A third never give up, a third give up at once, a third at a
						// random moment while the command is queued or in flight.
						ctx, cancel := context.WithCancel(context.Background())
						switch rng.IntN(3) {
						case 1:
							cancel()
						case 2:
							ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(3000))*time.Microsecond)
						}
						v, err := c.Do(ctx, "ECHO", payload)
						cancel()
						switch {
						case err == nil:
							if s, _ := v.Text(); s != payload {
								wrong.Add(1)
							}
							ok.Add(1)
						case errors.Is(err, ErrNotSent) && errors.Is(err, ctx.Err()):
							notSent.Add(1)
						case errors.Is(err, ErrOutcomeUnknown) && errors.Is(err, ctx.Err()):
							unknown.Add(1)
						default:
							t.Errorf("unexpected error: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			t.Logf("ok %d, not sent %d, outcome unknown %d", ok.Load(), notSent.Load(), unknown.Load())
			if wrong.Load() != 0 {
				t.Fatalf("%d replies went to the wrong caller", wrong.Load())
			}
			if ok.Load() == 0 || notSent.Load()+unknown.Load() == 0 {
				t.Fatalf("the test exercised only one path")
			}
			for i := range 100 {
				v, err := c.Do(context.Background(), "ECHO", i)
				if n, _ := v.Int(); err != nil || n != int64(i) {
					t.Fatalf("after the storm: ECHO %d = %s, %v", i, v, err)
				}
			}
		})
	}
}

// A server killed while commands are in flight fails every waiting caller promptly.
func TestServerKilledMidPipeline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: -1})
	srv.Pause(t)
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.Do(context.Background(), "SET", fmt.Sprint("k", i), i)
			errs <- err
		}()
	}
	testkit.WaitFor(t, "all commands written", func() bool { _, f := c.counts(); return f == n })
	start := time.Now()
	srv.Kill(t)
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Errorf("in-flight command after kill: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a caller hangs after the server died")
		}
	}
	t.Logf("all %d callers failed %v after the kill", n, time.Since(start))
	if c.Err() == nil {
		t.Fatal("connection not marked broken")
	}
}

func TestReadTimeoutBreaksTheConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: 200 * time.Millisecond})
	srv.Pause(t)
	defer srv.Resume(t)
	_, err := c.Do(context.Background(), "PING")
	if !errors.Is(err, ErrOutcomeUnknown) || c.Err() == nil {
		t.Fatalf("PING to a paused server: %v (conn err %v)", err, c.Err())
	}
}

func TestBlockingCommandIgnoresReadTimeout(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: 50 * time.Millisecond})
	v, err := c.DoBlocking(context.Background(), "BLPOP", "empty-list", "0.3")
	if err != nil || !v.IsNull() {
		t.Fatalf("BLPOP: %s %v", v, err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLargeBulkAndLimit(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	c := dialT(t, srv.Addr(), Options{ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if _, err := c.Do(ctx, "SET", "big", big); err != nil {
		t.Fatal(err)
	}
	v, err := c.Do(ctx, "GET", "big")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := v.Text(); s != string(big) {
		t.Fatalf("64 MiB value did not round-trip (len %d)", len(s))
	}

	small := dialT(t, srv.Addr(), Options{Limits: resp.Limits{MaxBulkLen: 1 << 20}})
	_, err = small.Do(ctx, "GET", "big")
	if !errors.Is(err, resp.ErrLimit) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("reply over the limit: %v", err)
	}
	if !errors.Is(small.Err(), resp.ErrLimit) {
		t.Fatalf("connection not closed after an over-limit reply: %v", small.Err())
	}
}

func TestTrackingInvalidationIsAPush(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	pushes := make(chan resp.Value, 8)
	c := dialT(t, srv.Addr(), Options{PushHandler: func(v resp.Value) { pushes <- v }})
	if _, err := c.Do(ctx, "CLIENT", "TRACKING", "ON"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "GET", "tracked"); err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "tracked", "changed")
	select {
	case p := <-pushes:
		if !strings.Contains(p.String(), "invalidate") || !strings.Contains(p.String(), "tracked") {
			t.Fatalf("push %s", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no invalidation push")
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPubSubModeRESP2(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			msgs := make(chan resp.Value, 8)
			c := dialT(t, srv.Addr(), Options{Protocol: proto, PushHandler: func(v resp.Value) { msgs <- v }})
			c.SetPubSubMode(true)
			if err := c.Send(ctx, "SUBSCRIBE", "news"); err != nil {
				t.Fatal(err)
			}
			if v := <-msgs; !strings.Contains(v.String(), `"subscribe", "news", 1`) {
				t.Fatalf("confirmation %s", v)
			}
			srv.Do(t, "PUBLISH", "news", "hello")
			if v := <-msgs; v.String() != `>["message", "news", "hello"]` && v.String() != `["message", "news", "hello"]` {
				t.Fatalf("message %s", v)
			}
		})
	}
}

// TestDoConfirmed subscribes as a user allowed only the channels ok*, in both
// protocols: a refused SUBSCRIBE returns NOPERM and leaves the connection working, an
// accepted one returns once every channel is confirmed (no confirmation reaches the
// push handler), and a PING in subscriber mode is answered in order behind the
// messages; bad arguments are refused before anything is sent.
func TestDoConfirmed(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{
		Users: []testserver.User{{Name: "sub", Password: "pw", Rules: []string{"resetchannels", "&ok*", "+@all", "~*"}}},
	})
	ctx := context.Background()
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			msgs := make(chan resp.Value, 8)
			c := dialT(t, srv.Addr(), Options{Protocol: proto, Username: "sub", Password: "pw", PushHandler: func(v resp.Value) { msgs <- v }})
			c.SetPubSubMode(true)
			if err := c.DoConfirmed(ctx, "subscribe", 2, "SUBSCRIBE", "ok.1", "denied"); !resp.HasCode(err, "NOPERM") {
				t.Fatalf("SUBSCRIBE of a refused channel: %v, want NOPERM", err)
			}
			if err := c.DoConfirmed(ctx, "subscribe", 2, "SUBSCRIBE", "ok.1", "ok.2"); err != nil {
				t.Fatalf("SUBSCRIBE: %v", err)
			}
			if err := c.DoConfirmed(ctx, "psubscribe", 1, "PSUBSCRIBE", "denied*"); !resp.HasCode(err, "NOPERM") {
				t.Fatalf("PSUBSCRIBE of a refused pattern: %v, want NOPERM", err)
			}
			srv.Do(t, "PUBLISH", "ok.2", "hello")
			if err := c.DoConfirmed(ctx, "pong", 1, "PING"); err != nil {
				t.Fatalf("PING in subscriber mode: %v", err)
			}
			select {
			case v := <-msgs:
				if !strings.Contains(v.String(), `"message", "ok.2", "hello"`) {
					t.Fatalf("push handler got %s, want the message alone", v)
				}
			default:
				t.Fatal("the message published before the PING was not delivered before its reply")
			}
			if c.Err() != nil {
				t.Fatalf("connection broken: %v", c.Err())
			}
			for _, bad := range []struct {
				kind string
				n    int
			}{{"subscribe", 0}, {"message", 1}} {
				if err := c.DoConfirmed(ctx, bad.kind, bad.n, "SUBSCRIBE", "ok.3"); !errors.Is(err, ErrInvalidOptions) {
					t.Errorf("DoConfirmed(%q, %d): %v, want ErrInvalidOptions", bad.kind, bad.n, err)
				}
			}
		})
	}
}

func TestDoEncoded(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	ctx := context.Background()
	var payload []byte
	for _, cmd := range [][]any{{"SET", "enc", 41}, {"INCR", "enc"}, {"LPUSH", "enc", "x"}} {
		var err error
		if payload, err = resp.AppendCommand(payload, cmd...); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.DoEncoded(ctx, 3, payload)
	if err != nil || len(res) != 3 || res[1].Value.String() != "42" || !resp.HasCode(res[2].Err, "WRONGTYPE") {
		t.Fatalf("DoEncoded: %v %v", res, err)
	}
	for _, bad := range []struct {
		n       int
		payload []byte
	}{{0, payload}, {3, nil}, {-1, payload}} {
		if _, err := c.DoEncoded(ctx, bad.n, bad.payload); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("DoEncoded(%d, %d bytes): %v", bad.n, len(bad.payload), err)
		}
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// A connection idle for longer than its read deadline reaches is still usable: the
// deadline left armed after the last reply must not fail the next command.
func TestIdleLongerThanReadTimeout(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: 50 * time.Millisecond})
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // idle past the socket's read deadline, on the real clock it runs on
		if err := c.Ping(ctx); err != nil || c.Err() != nil {
			t.Fatalf("PING after idling: %v (connection: %v)", err, c.Err())
		}
	}
}

// A caller reading its own reply polls the socket while replies come fast, stops
// polling while they come slower than the budget, and starts again when they speed up.
func TestSelfReadPollsOnlyWhileRepliesAreFast(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Args: []string{"--enable-debug-command", "yes"}})
	for _, name := range []string{"uncancellable", "cancellable"} {
		t.Run(name, func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{})
			// A budget loopback round trips stay well within even under -race on a
			// loaded machine, and well below the slow replies.
			c.r.spin.budget = time.Millisecond
			ctx := context.Background()
			if name == "cancellable" {
				ctx = t.Context()
			}
			polls := func() int64 {
				c.mu.Lock() // the read role is idle between calls; the lock orders the reads
				defer c.mu.Unlock()
				return c.r.spin.polls
			}
			ping := func(args ...any) {
				t.Helper()
				if _, err := c.Do(ctx, args...); err != nil {
					t.Fatal(err)
				}
			}
			for range 20 {
				ping("PING")
			}
			if polls() == 0 {
				t.Fatal("no polling on a fast loopback server")
			}
			for range 12 {
				ping("DEBUG", "SLEEP", "0.01") // 10 ms replies
			}
			before := polls()
			for range 5 {
				ping("DEBUG", "SLEEP", "0.01")
			}
			if n := polls() - before; n != 0 {
				t.Fatalf("%d polls while replies take 10 ms", n)
			}
			for range 100 {
				ping("PING")
			}
			if polls() == before {
				t.Fatal("polling did not resume once replies were fast again")
			}
		})
	}
}

// Polling goes on while the average wait is over the budget but within twice it (where
// parked waits, which count the poller's wake-up, keep a fast server's average) and
// stops above that.
func TestSelfReadPollsUpToTwiceTheBudget(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	tests := []struct {
		name      string
		avg       time.Duration
		wantPolls bool
	}{
		{"within the budget", time.Second / 2, true},
		{"over the budget", 3 * time.Second / 2, true},
		{"over twice the budget", 5 * time.Second / 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{})
			c.mu.Lock() // the read role is idle between calls; the lock orders the writes
			// A budget no loopback reply comes near, so the one PING moves the
			// average away from the set one only downwards, and slightly.
			c.r.spin.budget = time.Second
			c.r.spin.avg = int64(tt.avg)
			before := c.r.spin.polls
			c.mu.Unlock()
			if _, err := c.Do(context.Background(), "PING"); err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			polled := c.r.spin.polls > before
			c.mu.Unlock()
			if polled != tt.wantPolls {
				t.Errorf("average wait %v of a %v budget: polled %v, want %v", tt.avg, time.Second, polled, tt.wantPolls)
			}
		})
	}
}

// A caller whose replies come a little over the budget does not poll in vain on every
// wait: a second wait in a row whose polls ran out counts as spinMissPenalty budgets,
// which stops the polling until parked waits have brought the average back. Before, such replies kept
// the average under twice the budget, and every wait polled its whole budget.
func TestSelfReadStopsPollingInVain(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Args: []string{"--enable-debug-command", "yes"}})
	c := dialT(t, srv.Addr(), Options{})
	c.mu.Lock() // the read role is idle between calls; the lock orders the writes
	c.r.spin.budget = time.Millisecond
	c.mu.Unlock()
	polls := func() int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.r.spin.polls
	}
	const waits = 24
	polled := 0
	for range waits {
		before := polls()
		// 1.5 ms replies: over the budget, under twice it.
		if _, err := c.Do(context.Background(), "DEBUG", "SLEEP", "0.0015"); err != nil {
			t.Fatal(err)
		}
		if polls() > before {
			polled++
		}
	}
	if polled > waits/2 {
		t.Fatalf("%d of %d waits polled for replies that always come after the budget", polled, waits)
	}
}

// A reply that outlasts the budget now and then (on loopback, the server or the client
// descheduled) does not stop the polling for the fast replies between: only polls in
// vain twice in a row, with no reply within the budget between them, count
// spinMissPenalty budgets. When every one did, slow replies alternating with fast ones
// kept the average over twice the budget and most fast replies parked.
func TestSelfReadKeepsPollingAfterALoneMiss(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Args: []string{"--enable-debug-command", "yes"}})
	c := dialT(t, srv.Addr(), Options{})
	c.mu.Lock()
	// A budget that a PING stays well within even on a loaded machine, which a reply
	// of 1.5 budgets outlasts. Large, because a loaded machine adds its scheduling
	// delays to every reply: at a budget of 5 ms a 7.5 ms reply that took 18 ms
	// averaged with the fast ones over twice the budget, as a slow server's replies
	// do, and stopped the polling (TestSpinAccounting checks the rules on a script).
	c.r.spin.budget = 20 * time.Millisecond
	c.mu.Unlock()
	polls := func() int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.r.spin.polls
	}
	// Two slow replies in a row first: their penalty stops the polling, and the fast
	// replies parked meanwhile must count as found within the budget, or every slow
	// reply after them was charged the penalty again and they stayed parked.
	for range 2 {
		if _, err := c.Do(context.Background(), "DEBUG", "SLEEP", "0.03"); err != nil {
			t.Fatal(err)
		}
	}
	const fast = 12
	polled := 0
	for range fast {
		if _, err := c.Do(context.Background(), "DEBUG", "SLEEP", "0.03"); err != nil {
			t.Fatal(err)
		}
		before := polls()
		if _, err := c.Do(context.Background(), "PING"); err != nil {
			t.Fatal(err)
		}
		if polls() > before {
			polled++
		}
	}
	// A PING slower than the budget, under load, may make a second miss in a row.
	if polled < fast*3/4 {
		t.Fatalf("%d of %d fast replies polled, each after one slow reply", polled, fast)
	}
}

// A caller reading the replies of a large batch itself parks without polling, and its
// wait does not count in the average of round trips, while a small batch still polls.
func TestSelfReadPollsOnlyForSmallBatches(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	tests := []struct {
		name      string
		commands  int
		wantPolls bool
	}{
		{"one command", 1, true},
		{"batch at the limit", spinMaxReplies, true},
		{"batch over the limit", 100, false},
	}
	for _, tt := range tests {
		for _, ctxName := range []string{"uncancellable", "cancellable"} {
			t.Run(tt.name+"/"+ctxName, func(t *testing.T) {
				c := dialT(t, srv.Addr(), Options{})
				c.r.spin.budget = time.Millisecond // as in TestSelfReadPollsOnlyWhileRepliesAreFast
				ctx := context.Background()
				if ctxName == "cancellable" {
					ctx = t.Context()
				}
				state := func() (polls, avg int64) {
					c.mu.Lock() // the read role is idle between calls; the lock orders the reads
					defer c.mu.Unlock()
					return c.r.spin.polls, c.r.spin.avg
				}
				cmds := make([][]any, tt.commands)
				for i := range cmds {
					cmds[i] = []any{"PING"}
				}
				polls, avg := state()
				for range 20 {
					if _, err := c.DoMulti(ctx, cmds...); err != nil {
						t.Fatal(err)
					}
				}
				gotPolls, gotAvg := state()
				if polled := gotPolls > polls; polled != tt.wantPolls {
					t.Errorf("%d polls over 20 batches of %d; want polling %v", gotPolls-polls, tt.commands, tt.wantPolls)
				}
				if !tt.wantPolls && gotAvg != avg {
					t.Errorf("the round-trip average moved from %d to %d ns on batches that do not poll", avg, gotAvg)
				}
			})
		}
	}
}

// A caller reading its own reply while the server closes the connection fails at once
// with an unknown outcome, whether the close comes while it polls or once it parked.
func TestSelfReadSeesTheServerClose(t *testing.T) {
	for _, delay := range []time.Duration{0, 5 * time.Millisecond} {
		c, f := dialFakeTCP(t, Options{ReadTimeout: -1}, helloRESP3)
		res := make(chan error, 1)
		go func() {
			_, err := c.Do(t.Context(), "GET", "k")
			res <- err
		}()
		f.Expect("GET", "k")
		time.Sleep(delay) // 5ms: long enough that the caller has stopped polling and parked
		f.Close()
		select {
		case err := <-res:
			if !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("close after %v: %v; want ErrOutcomeUnknown", delay, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("close after %v: the caller hangs", delay)
		}
	}
}

// Deadlines of a few microseconds on calls of several goroutines, some with a
// cancellable context: each call ends with its reply or its deadline, and the
// connection survives. A deadline put on the socket early (it was read with two
// readings of the clock) fired before the call's deadline, was taken for the
// connection's own read timeout and broke the connection for everyone.
func TestCallDeadlineNeverBreaksTheConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, rt := range []time.Duration{0, 10 * time.Second} {
		c := dialT(t, srv.Addr(), Options{ReadTimeout: rt})
		var wg sync.WaitGroup
		var mu sync.Mutex
		ends := map[string]int{}
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3000 {
					ctx := context.Background()
					if (g+i)%2 == 0 {
						ctx = cancellable
					}
					val := strconv.Itoa(g) + ":" + strconv.Itoa(i)
					o := CallOptions{Deadline: time.Now().Add(time.Duration(rand.IntN(150)) * time.Microsecond)}
					v, err := c.DoWith(ctx, o, "ECHO", val)
					end := "reply"
					switch {
					case err == nil:
						if v.String() != strconv.Quote(val) {
							t.Errorf("reply %s to %s", v, val)
						}
					case errors.Is(err, context.DeadlineExceeded):
						end = "deadline"
					default:
						t.Errorf("read timeout %v: %v (the connection: %v)", rt, err, c.Err())
						return
					}
					mu.Lock()
					ends[end]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err := c.Err(); err != nil {
			t.Fatalf("read timeout %v: the connection broke: %v", rt, err)
		}
		t.Logf("read timeout %v: %v", rt, ends)
	}
}

// A call with a deadline (CallOptions.Deadline) stops waiting at it, as if its context
// had that deadline, whether its caller reads its own reply on a quiet connection
// (with or without a cancellable context) or waits behind a blocking command another
// caller reads; the late reply is dropped and the connection serves the next caller.
func TestCallDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	cancelled, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		busy bool // a blocking command of another caller's is in flight first
	}{
		{"quiet", context.Background(), false},
		{"quiet, cancellable context", cancelled, false},
		{"behind a blocking command", context.Background(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{ReadTimeout: 10 * time.Second})
			var blocked chan error
			if tc.busy {
				blocked = make(chan error, 1)
				go func() {
					_, err := c.DoBlocking(context.Background(), "BLPOP", "deadline:empty", "1")
					blocked <- err
				}()
				testkit.WaitFor(t, "BLPOP in flight", func() bool {
					return strings.Contains(srv.Do(t, "CLIENT", "LIST"), "cmd=blpop")
				})
			}
			if !tc.busy {
				srv.Pause(t) // nothing is answered until Resume
			}
			o := CallOptions{Deadline: time.Now().Add(50 * time.Millisecond)}
			_, err := c.DoWith(tc.ctx, o, "PING")
			if !tc.busy {
				srv.Resume(t)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("a call past its deadline: %v, want an unknown outcome matching context.DeadlineExceeded", err)
			}
			if blocked != nil {
				if err := <-blocked; err != nil {
					t.Fatalf("BLPOP: %v", err)
				}
			}
			v, err := c.Do(context.Background(), "ECHO", "next")
			if err != nil || v.String() != `"next"` {
				t.Fatalf("the next call: %s %v (conn err %v)", v, err, c.Err())
			}
		})
	}
}

// A call with a deadline under a context that never ends stops waiting at the deadline
// even when the server takes none of its bytes: it does not write inline with a
// blocking write, as an uncancellable caller without a deadline does (bounded only by
// the write timeout), but as a cancellable one, leaving the rest to the writer
// goroutine. Issue #28: a Redlock's part on a server that hangs.
func TestCallDeadlineBoundsTheWrite(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{ReadTimeout: time.Minute, WriteTimeout: 20 * time.Second})
	big := strings.Repeat("x", 64<<20) // more than the socket buffers hold
	srv.Pause(t)                       // nothing is read until Resume
	o := CallOptions{Deadline: time.Now().Add(100 * time.Millisecond)}
	_, err := c.DoWith(context.Background(), o, "SET", "deadline:big", big)
	srv.Resume(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past its deadline, its write unfinished: %v, want one matching context.DeadlineExceeded", err)
	}
}
