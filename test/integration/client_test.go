package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

func TestDoAndDoMulti(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		if _, err := c.Do(ctx, "SET", "k", "v", "PX", 30000); err != nil {
			t.Fatal(err)
		}
		v, err := c.Do(ctx, "GET", "k")
		if s, _ := v.Text(); err != nil || s != "v" {
			t.Fatalf("GET: %s %v", v, err)
		}
		if v, err := c.Do(ctx, "GET", "nope"); err != nil || !v.IsNull() {
			t.Fatalf("GET missing: %s %v", v, err)
		}
		_, err = c.Do(ctx, "INCR", "k")
		var se *resp.ServerError
		if !errors.As(err, &se) || se.Code != "ERR" {
			t.Fatalf("INCR of a string: %v", err)
		}
		res, err := c.DoMulti(ctx, []any{"SET", "a", 1}, []any{"INCRBY", "a", int64(41)}, []any{"INCR", "k"}, []any{"GET", "a"})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res[1].Value.Int(); n != 42 || res[2].Err == nil || res[3].Value.String() != `"42"` {
			t.Fatalf("DoMulti results %v", res)
		}
		p := c.Pipeline().Do("SET", "x", 1.5).Do("INCRBYFLOAT", "x", 1).Do("GET", "x")
		if p.Len() != 3 {
			t.Fatal(p.Len())
		}
		res, err = p.Exec(ctx)
		if err != nil || res[2].Value.String() != `"2.5"` {
			t.Fatalf("pipeline %v %v", res, err)
		}
		if p.Len() != 0 {
			t.Fatal("Exec did not empty the pipeline")
		}
	})
}

func TestBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	tests := []struct {
		name string
		args []any
		want error
	}{
		{"empty command", nil, resp.ErrEmptyCommand},
		{"nil argument", []any{"SET", "k", nil}, resp.ErrInvalidArg},
		{"unsupported type", []any{"SET", "k", struct{}{}}, resp.ErrInvalidArg},
		{"NaN", []any{"SET", "k", math.NaN()}, resp.ErrInvalidArg},
		{"MULTI on a shared connection", []any{"MULTI"}, respire.ErrConnState},
		{"subscribe", []any{"subscribe", "ch"}, respire.ErrConnState},
		{"select", []any{"SELECT", 1}, respire.ErrConnState},
		{"client reply", []any{"CLIENT", "REPLY", "OFF"}, respire.ErrConnState},
	}
	for _, tt := range tests {
		if _, err := c.Do(ctx, tt.args...); !errors.Is(err, tt.want) {
			t.Errorf("Do %s: %v, want %v", tt.name, err, tt.want)
		}
		if tt.args != nil {
			if _, err := c.DoMulti(ctx, []any{"PING"}, tt.args); !errors.Is(err, tt.want) {
				t.Errorf("DoMulti %s: %v, want %v", tt.name, err, tt.want)
			}
		}
	}
	if _, err := c.DoMulti(ctx, []any{"BLPOP", "l", 1}); !errors.Is(err, respire.ErrBlockingInBatch) {
		t.Errorf("blocking command in a batch: %v", err)
	}
	if _, err := c.Subscribe(ctx); !errors.Is(err, respire.ErrInvalidArg) {
		t.Errorf("Subscribe with no channel: %v", err)
	}
	if _, err := c.Subscribe(ctx, ""); !errors.Is(err, respire.ErrInvalidArg) {
		t.Errorf("Subscribe to an empty channel: %v", err)
	}
	if err := c.Watch(ctx, nil, "k"); !errors.Is(err, respire.ErrInvalidArg) {
		t.Errorf("Watch nil fn: %v", err)
	}
	if err := c.Watch(ctx, func(*respire.Tx) error { return nil }, ""); !errors.Is(err, respire.ErrInvalidArg) {
		t.Errorf("Watch empty key: %v", err)
	}
	yielded := 0
	for _, err := range c.HScan(ctx, "", respire.ScanOptions{}) {
		yielded++
		if !errors.Is(err, respire.ErrInvalidArg) {
			t.Errorf("HScan empty key: %v", err)
		}
	}
	if yielded != 1 {
		t.Errorf("HScan of an empty key yielded %d times; want its error, once", yielded)
	}
	// The connection is still in sync after all of that.
	if v, err := c.Do(ctx, "ECHO", "still fine"); err != nil || v.String() != `"still fine"` {
		t.Fatalf("after bad input: %s %v", v, err)
	}
	c.Close()
	if _, err := c.Do(ctx, "PING"); !errors.Is(err, respire.ErrClosed) {
		t.Errorf("Do on a closed client: %v", err)
	}
	if _, err := c.Subscribe(ctx, "x"); !errors.Is(err, respire.ErrClosed) {
		t.Errorf("Subscribe on a closed client: %v", err)
	}
}

func TestNewClientErrors(t *testing.T) {
	ctx := context.Background()
	bad := []respire.Options{
		{},
		{Addrs: []string{"nohostport"}},
		{Addrs: []string{":6379"}},
		{Addrs: []string{"127.0.0.1:0"}},
		{Addrs: []string{"127.0.0.1:70000"}},
		{Addrs: []string{"127.0.0.1:6379"}, Protocol: 1},
		{Addrs: []string{"127.0.0.1:6379"}, DB: -1},
		{Addrs: []string{"127.0.0.1:6379"}, PoolSize: 2, MinIdle: 3},
		{Addrs: []string{"127.0.0.1:6379"}, Username: "u"},
		{Addrs: []string{"127.0.0.1:6379"}, SubscriptionHealthCheck: -2},
	}
	for _, o := range bad {
		if _, err := respire.NewClient(ctx, o); !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	// Nothing listens there: the error says so, quickly.
	port := testserver.FreePort(t)
	_, err := respire.NewClient(ctx, respire.Options{Addrs: []string{"127.0.0.1:" + strconv.Itoa(port)}, DialTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable server: %v", err)
	}
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "k", "1"); err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	if _, err := c.Do(ctx, "PING"); err == nil {
		t.Fatal("PING to a dead server succeeded")
	}
	srv.Restart(t)
	testkit.WaitFor(t, "a reconnect", func() error {
		_, err := c.Do(ctx, "PING")
		return err
	})
}

func TestKilledConnectionIsReplacedTransparently(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ClientName: "victim"})
	ctx := context.Background()
	if err := ping(ctx, c); err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
	// The first command after the kill finds the connection broken, or the client has
	// noticed already; either way a read-only or unsent command is retried.
	v, err := c.Do(ctx, "GET", "k")
	if err != nil || !v.IsNull() {
		t.Fatalf("GET after the connection was killed: %s %v", v, err)
	}
}

func TestBlockingCommandsUseADedicatedConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{ReadTimeout: 100 * time.Millisecond}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		list := "jobs-" + t.Name()
		got := make(chan resp.Value, 1)
		go func() {
			v, err := c.Do(ctx, "BLPOP", list, 5)
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		testkit.WaitFor(t, "BLPOP to block", func() bool {
			return strings.Contains(srv.Do(t, "CLIENT", "LIST"), "cmd=blpop")
		})
		// The shared connection is not stuck behind BLPOP, and its read timeout does
		// not cut the blocking command short.
		// The sleep lets the read timeout pass; what is asserted is that nothing happens
		// then, which no condition can be polled for.
		time.Sleep(150 * time.Millisecond)
		if err := ping(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(ctx, "RPUSH", list, "job1"); err != nil {
			t.Fatal(err)
		}
		v := <-got
		if v.String() != fmt.Sprintf("[%q, \"job1\"]", list) {
			t.Fatalf("BLPOP got %s", v)
		}
		// A cancelled blocking command does not poison the pool.
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := c.Do(cctx, "BLPOP", list, 0)
		cancel()
		if !errors.Is(err, conn.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled BLPOP: %v", err)
		}
		srv.Do(t, "RPUSH", list, "job2")
		v, err = c.Do(ctx, "BLPOP", list, 1)
		if err != nil || v.String() != fmt.Sprintf("[%q, \"job2\"]", list) {
			t.Fatalf("BLPOP after a cancelled one: %s %v (job2 went to the abandoned command?)", v, err)
		}
	})
}

func ping(ctx context.Context, c *respire.Client) error {
	v, err := c.Do(ctx, "PING")
	if err == nil && v.String() != `"PONG"` {
		err = fmt.Errorf("PING got %s", v)
	}
	return err
}

func TestWatch(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		key := "balance-" + t.Name()
		srv.Do(t, "SET", key, "10")
		incr := func(interfere bool) error {
			return c.Watch(ctx, func(tx *respire.Tx) error {
				v, err := tx.Do(ctx, "GET", key)
				if err != nil {
					return err
				}
				n, _ := v.Int()
				if interfere {
					srv.Do(t, "SET", key, "100")
				}
				res, err := tx.Exec(ctx, []any{"SET", key, n + 1}, []any{"GET", key})
				if err == nil && res[1].Value.String() != strconv.Quote(strconv.FormatInt(n+1, 10)) {
					t.Errorf("EXEC results %v", res)
				}
				return err
			}, key)
		}
		if err := incr(false); err != nil {
			t.Fatal(err)
		}
		if got := srv.Do(t, "GET", key); got != "11" {
			t.Fatalf("after a clean transaction: %s", got)
		}
		if err := incr(true); !errors.Is(err, respire.ErrTxFailed) {
			t.Fatalf("transaction over a changed key: %v", err)
		}
		if got := srv.Do(t, "GET", key); got != "100" {
			t.Fatalf("a failed transaction wrote: %s", got)
		}
		// EXECABORT: a command rejected while queueing aborts everything.
		err := c.Watch(ctx, func(tx *respire.Tx) error {
			_, err := tx.Exec(ctx, []any{"SET", key, "0"}, []any{"GET"})
			return err
		})
		if !resp.HasCode(err, "EXECABORT") {
			t.Fatalf("EXECABORT: %v", err)
		}
		if got := srv.Do(t, "GET", key); got != "100" {
			t.Fatalf("an aborted transaction wrote: %s", got)
		}
		// A transaction that never calls Exec leaves no WATCH behind on the pooled
		// connection: the next transaction on it succeeds.
		c.Watch(ctx, func(tx *respire.Tx) error { return nil }, key)
		srv.Do(t, "SET", key, "5")
		if err := incr(false); err != nil {
			t.Fatalf("transaction after an abandoned one: %v", err)
		}
	})
}

func TestScripts(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{KeyPrefix: "app:"}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		s := respire.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
		srv.Do(t, "SCRIPT", "FLUSH")
		if _, err := s.Run(ctx, c, []string{"scripted"}, "v1"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Do(t, "GET", "app:scripted"); got != "v1" {
			t.Fatalf("script wrote %q", got)
		}
		if got := srv.Do(t, "SCRIPT", "EXISTS", s.Hash()); got != "1" {
			t.Fatalf("script not cached after EVAL: %s", got)
		}
		if _, err := s.Run(ctx, c, []string{"scripted"}, "v2"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Do(t, "GET", "app:scripted"); got != "v2" {
			t.Fatalf("EVALSHA wrote %q", got)
		}
		bad := respire.NewScript("return redis.call('NOSUCHCOMMAND')")
		if _, err := bad.Run(ctx, c, nil); err == nil {
			t.Fatal("a failing script returned no error")
		}
	})
}

// A script with more keys and arguments than Run builds on the stack sends the same
// bytes, and an argument that cannot be encoded fails as Do fails it: an *resp.ArgError
// at its position in the command, with nothing sent.
func TestScriptsManyArguments(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app:"})
	ctx := context.Background()
	s := respire.NewScript("local out = {KEYS[1], KEYS[2], KEYS[3]} for _, a in ipairs(ARGV) do out[#out + 1] = a end return out")
	type named int32
	args := []any{"a", []byte("b"), 3, int64(-4), uint8(5), 6.5, float32(0.25), true, false, named(7),
		time.Duration(8), json.RawMessage("9"), "ten", 11, 12}
	v, err := s.Run(ctx, c, []string{"k1", "k2", "k3"}, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Array()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"app:k1", "app:k2", "app:k3", "a", "b", "3", "-4", "5", "6.5", "0.25", "1", "0", "7", "8", "9", "ten", "11", "12"}
	if len(got) != len(want) {
		t.Fatalf("script saw %d words, want %d: %v", len(got), len(want), v)
	}
	for i, w := range want {
		if text, _ := got[i].Text(); text != w {
			t.Errorf("word %d: %q, want %q", i, text, w)
		}
	}
	for _, bad := range []any{nil, math.NaN(), float32(math.NaN()), map[string]int{}, struct{}{}} {
		args := append(append([]any{}, args...), bad)
		_, err := s.Run(ctx, c, []string{"k1", "k2", "k3"}, args...)
		_, doErr := c.Do(ctx, append([]any{"EVALSHA", s.Hash(), 3, "k1", "k2", "k3"}, args...)...)
		var ae, doAE *resp.ArgError
		if !errors.As(err, &ae) || !errors.As(doErr, &doAE) || *ae != *doAE ||
			errors.Is(err, conn.ErrNotSent) != errors.Is(doErr, conn.ErrNotSent) {
			t.Errorf("argument %T: Run's error %v, Do's %v", bad, err, doErr)
		}
	}
}

func TestScanIterators(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "p*:"})
	ctx := context.Background()
	for i := range 250 {
		srv.Do(t, "SET", fmt.Sprintf("p*:user:%d", i), "x")
		srv.Do(t, "SET", fmt.Sprintf("other:user:%d", i), "x")
		srv.Do(t, "HSET", "p*:h", fmt.Sprint("f", i), strconv.Itoa(i))
		srv.Do(t, "SADD", "p*:s", fmt.Sprint("m", i))
		srv.Do(t, "ZADD", "p*:z", strconv.Itoa(i), fmt.Sprint("m", i))
	}
	seen := map[string]bool{}
	for key, err := range c.Scan(ctx, respire.ScanOptions{Match: "user:*", Count: 50}) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "user:") {
			t.Fatalf("scanned key %q still has a prefix or is foreign", key)
		}
		seen[key] = true
	}
	if len(seen) != 250 {
		t.Fatalf("Scan saw %d keys, want 250", len(seen))
	}
	fields := 0
	for fv, err := range c.HScan(ctx, "h", respire.ScanOptions{}) {
		if err != nil || "f"+fv.Value != fv.Field {
			t.Fatalf("HScan %v %v", fv, err)
		}
		fields++
	}
	members := 0
	for m, err := range c.SScan(ctx, "s", respire.ScanOptions{Match: "m1*"}) {
		if err != nil || !strings.HasPrefix(m, "m1") {
			t.Fatalf("SScan %q %v", m, err)
		}
		members++
	}
	scored := 0
	for sm, err := range c.ZScan(ctx, "z", respire.ScanOptions{}) {
		if err != nil || "m"+strconv.Itoa(int(sm.Score)) != sm.Member {
			t.Fatalf("ZScan %v %v", sm, err)
		}
		scored++
	}
	if fields != 250 || members != 111 || scored != 250 {
		t.Fatalf("fields %d, members %d, scored %d", fields, members, scored)
	}
	// Stopping early is fine.
	for range c.Scan(ctx, respire.ScanOptions{}) {
		break
	}
}

func TestPubSubResubscribesAfterKill(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		sub, err := c.Subscribe(ctx, "news")
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.PSubscribe(ctx, "alerts.*"); err != nil {
			t.Fatal(err)
		}
		publishUntilHeard := func(channel, payload string) respire.Message {
			t.Helper()
			testkit.WaitFor(t, "a subscriber to "+channel, func() bool { return srv.Do(t, "PUBLISH", channel, payload) != "0" })
			select {
			case m := <-sub.Messages():
				return m
			case <-time.After(5 * time.Second):
				t.Fatalf("message on %s not delivered", channel)
			}
			return respire.Message{}
		}
		if m := publishUntilHeard("news", "one"); m.Channel != "news" || m.Payload != "one" {
			t.Fatalf("got %+v", m)
		}
		if m := publishUntilHeard("alerts.fire", "two"); m.Pattern != "alerts.*" || m.Channel != "alerts.fire" || m.Payload != "two" {
			t.Fatalf("got %+v", m)
		}
		srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
		if m := publishUntilHeard("news", "after-kill"); m.Payload != "after-kill" {
			t.Fatalf("after resubscribe got %+v", m)
		}
		if m := publishUntilHeard("alerts.flood", "pattern-after-kill"); m.Payload != "pattern-after-kill" {
			t.Fatalf("pattern after resubscribe got %+v", m)
		}
		if err := sub.Unsubscribe(ctx, "news"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "unsubscribe", func() bool { return srv.Do(t, "PUBLISH", "news", "x") == "0" })
		sub.Close()
		if _, open := <-sub.Messages(); open {
			// Drain anything buffered before Close.
			for range sub.Messages() {
			}
		}
		if err := sub.Subscribe(ctx, "again"); !errors.Is(err, respire.ErrClosed) {
			t.Fatalf("Subscribe after Close: %v", err)
		}
	})
}

func TestSubscriptionOverflowDropsAndCounts(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, SubscriptionBuffer: 2})
	ctx := context.Background()
	sub, err := c.Subscribe(ctx, "flood")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	testkit.WaitFor(t, "subscriber", func() bool { return srv.Do(t, "PUBSUB", "NUMSUB", "flood") == "flood\n1" })
	for i := range 5 {
		srv.Do(t, "PUBLISH", "flood", strconv.Itoa(i))
	}
	testkit.WaitFor(t, "drops", func() bool { return sub.Dropped() == 3 })
	for _, want := range []string{"0", "1"} {
		if m := <-sub.Messages(); m.Payload != want {
			t.Fatalf("kept %q, want the oldest %q", m.Payload, want)
		}
	}
}

func TestConcurrentDoIsAutoPipelined(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				val := fmt.Sprintf("%d-%d", g, i)
				if _, err := c.Do(ctx, "SET", "k"+val, val); err != nil {
					t.Error(err)
					return
				}
				if v, err := c.Do(ctx, "GET", "k"+val); err != nil || v.String() != strconv.Quote(val) {
					t.Errorf("GET %s: %s %v", val, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// All of it went over one connection (plus the harness's own).
	if n := strings.Count(srv.Do(t, "CLIENT", "LIST", "TYPE", "normal"), "id="); n != 2 {
		t.Fatalf("%d normal connections; auto-pipelining should share one:\n%s", n, srv.Do(t, "CLIENT", "LIST", "TYPE", "normal"))
	}
}

func TestPipelineRefusesBadCommandsWhole(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{KeyPrefix: "pp:"}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		srv.Do(t, "DEL", "pp:a")
		p := c.Pipeline().Do("SET", "a", 1).Do("SET", "b", nil).Do("BLPOP", "l", 1)
		if p.Len() != 3 {
			t.Fatal(p.Len())
		}
		if _, err := p.Exec(ctx); !errors.Is(err, resp.ErrInvalidArg) || !strings.Contains(err.Error(), "command 1") {
			t.Fatalf("Exec with a nil argument: %v", err)
		}
		if srv.Do(t, "EXISTS", "pp:a") != "0" {
			t.Fatal("a refused pipeline sent something")
		}
		if _, err := c.Pipeline().Do("BLPOP", "l", 1).Exec(ctx); !errors.Is(err, respire.ErrBlockingInBatch) {
			t.Fatalf("blocking command in a pipeline: %v", err)
		}
		// The same pipeline is usable again, and the prefix applies.
		res, err := p.Do("SET", "a", 7).Do("GET", "a").Exec(ctx)
		if err != nil || res[1].Value.String() != `"7"` || srv.Do(t, "GET", "pp:a") != "7" {
			t.Fatalf("reused pipeline: %v %v", res, err)
		}
	})
}
