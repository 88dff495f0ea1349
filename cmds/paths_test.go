package cmds

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// TestPipeline runs typed commands through a pipeline and reads their typed replies
// after Exec, in both protocols, with a raw command between them.
func TestPipeline(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		p := NewPipeline(c)
		set := Set("p:k", "v").In(p)
		raw := p.Do("ZADD", "p:z", 1, "a", 2, "b")
		get := Get("p:k").In(p)
		missing := Get("p:missing").In(p)
		zs := ZRangeWithScores("p:z", "0", "-1").In(p)
		wrong := Incr("p:k").In(p)
		if _, err := get.Result(); !errors.Is(err, ErrNoResult) {
			t.Errorf("before Exec: %v, want ErrNoResult", err)
		}
		if p.Len() != 6 {
			t.Errorf("Len %d, want 6", p.Len())
		}
		if err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if s, err := set.Result(); s != "OK" || err != nil {
			t.Errorf("SET: %q %v", s, err)
		}
		if n, err := raw.Result(); err != nil || n.Len() != 0 {
			if v, _ := n.Int(); v != 2 {
				t.Errorf("ZADD by Do: %v %v", n, err)
			}
		}
		if get.Val() != "v" {
			t.Errorf("GET: %v", get.Err())
		}
		if !errors.Is(missing.Err(), Nil) {
			t.Errorf("GET missing: %v, want Nil", missing.Err())
		}
		if got := zs.Val(); len(got) != 2 || got[1] != (Z{"b", 2}) {
			t.Errorf("ZRANGE WITHSCORES: %v %v", got, zs.Err())
		}
		var se *resp.ServerError
		if !errors.As(wrong.Err(), &se) {
			t.Errorf("INCR of a string: %v, want a server error", wrong.Err())
		}
		// Reused: the earlier replies are gone, the new one is there.
		again := Get("p:k").In(p)
		if err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(get.Err(), ErrNoResult) || again.Val() != "v" {
			t.Errorf("after a second Exec: old %v, new %q %v", get.Err(), again.Val(), again.Err())
		}
	})
}

// TestPipelineBadCommand checks that a command that cannot be built fails the
// pipeline before anything is sent, and says why in its own Reply.
func TestPipelineBadCommand(t *testing.T) {
	c := benchClient(t)
	ctx := context.Background()
	p := NewPipeline(c)
	ok := Set("p:bad", "v").In(p)
	bad := Expire("p:bad", 10*time.Millisecond+time.Second).In(p)
	if p.Len() != 2 {
		t.Errorf("Len %d, want 2", p.Len())
	}
	if err := p.Exec(ctx); !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("Exec of a pipeline holding an unusable command: %v, want ErrInvalidArg", err)
	}
	if !errors.Is(bad.Err(), ErrInvalidArg) || !errors.Is(ok.Err(), ErrInvalidArg) {
		t.Errorf("replies: bad %v, ok %v", bad.Err(), ok.Err())
	}
	if _, err := Get("p:bad").Do(ctx, c); !errors.Is(err, Nil) {
		t.Errorf("the pipeline's SET ran: %v", err)
	}
	// The pipeline is empty again: its next batch runs.
	again := Set("p:bad", "v").In(p)
	if err := p.Exec(ctx); err != nil || again.Err() != nil {
		t.Fatalf("the next batch: Exec %v, SET %v", err, again.Err())
	}
	if !errors.Is(ok.Err(), ErrNoResult) {
		t.Errorf("a reply of the refused batch after the next one: %v, want ErrNoResult", ok.Err())
	}
}

// TestTxPipelineBadCommand checks that a transaction holding a command that cannot
// be built runs none of its commands, as the server does with EXECABORT.
func TestTxPipelineBadCommand(t *testing.T) {
	c := benchClient(t)
	ctx := context.Background()
	var ok, bad Reply[bool]
	err := c.Watch(ctx, func(tx *respire.Tx) error {
		p := NewTxPipeline(tx)
		Set("tx:bad", "v").In(p)
		ok = SetNX("tx:bad2", "v").In(p)
		bad = Expire("tx:bad", 10*time.Millisecond+time.Second).In(p)
		return p.Exec(ctx)
	}, "tx:bad")
	if !errors.Is(err, ErrInvalidArg) {
		t.Fatalf("Watch of a transaction holding an unusable command: %v, want ErrInvalidArg", err)
	}
	if !errors.Is(bad.Err(), ErrInvalidArg) || !errors.Is(ok.Err(), ErrInvalidArg) {
		t.Errorf("replies: bad %v, ok %v", bad.Err(), ok.Err())
	}
	if n, err := Exists("tx:bad", "tx:bad2").Do(ctx, c); err != nil || n != 0 {
		t.Errorf("the transaction's SETs ran: %d keys, %v", n, err)
	}
}

// TestTransaction runs typed commands inside Watch: a read with tx and writes queued
// in a transaction pipeline.
func TestTransaction(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := Set("tx:n", "41").Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		var incr Reply[int64]
		var all Reply[map[string]string]
		err := c.Watch(ctx, func(tx *respire.Tx) error {
			s, err := Get("tx:n").Do(ctx, tx)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return err
			}
			p := NewTxPipeline(tx)
			incr = IncrBy("tx:n", int64(n)).In(p)
			HSet("tx:h", FieldValue{"f", n}).In(p)
			all = HGetAll("tx:h").In(p)
			return p.Exec(ctx)
		}, "tx:n")
		if err != nil {
			t.Fatal(err)
		}
		if incr.Val() != 82 || all.Val()["f"] != "41" {
			t.Errorf("INCRBY %d %v, HGETALL %v %v", incr.Val(), incr.Err(), all.Val(), all.Err())
		}
	})
}

// TestCached reads a typed command through the client-side cache.
func TestCached(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := HSet("c:h", FieldValue{"a", "1"}).Do(ctx, c); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m, err := HGetAll("c:h").Cached(ctx, c, time.Minute)
		if err != nil || m["a"] != "1" {
			t.Fatalf("HGETALL cached: %v %v", m, err)
		}
	}
	if st := c.CacheStats(); st.Hits < 1 {
		t.Errorf("cache stats %+v: the second read was not a hit", st)
	}
	if _, err := Get("c:none").Cached(ctx, c, time.Minute); !errors.Is(err, Nil) {
		t.Errorf("GET missing, cached: %v, want Nil", err)
	}
}

// recorder is a Doer of its own: a test double that keeps what it is given.
type recorder struct{ args [][]any }

func (r *recorder) Do(_ context.Context, args ...any) (resp.Value, error) {
	r.args = append(r.args, args)
	return resp.SimpleString("OK"), nil
}

// TestOtherDoer checks that a Doer other than the client's own types gets the
// arguments as text copies, and that a nil Doer is refused.
func TestOtherDoer(t *testing.T) {
	ctx := context.Background()
	var r recorder
	if _, err := Set("k", []byte("v")).Expire(2*time.Second).Do(ctx, &r); err != nil {
		t.Fatal(err)
	}
	want := []any{"SET", "k", "v", "EX", "2"}
	if len(r.args) != 1 || len(r.args[0]) != len(want) {
		t.Fatalf("got %v, want %v", r.args, want)
	}
	for i, a := range r.args[0] {
		if a != want[i] {
			t.Errorf("argument %d: %#v, want %#v", i, a, want[i])
		}
	}
	if _, err := Get("k").Do(ctx, nil); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("nil Doer: %v, want ErrInvalidArg", err)
	}
}

// TestManyArguments checks a command of more arguments than fit on the stack.
func TestManyArguments(t *testing.T) {
	c := benchClient(t)
	ctx := context.Background()
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = "many:" + strconv.Itoa(i)
	}
	fields := make([]FieldValue, 20)
	for i := range fields {
		fields[i] = FieldValue{"f" + strconv.Itoa(i), i}
	}
	if n, err := HSet("many:h", fields...).Do(ctx, c); n != 20 || err != nil {
		t.Fatalf("HSET of 20 fields: %d %v", n, err)
	}
	if n, err := Del(append(keys, "many:h")...).Do(ctx, c); n != 1 || err != nil {
		t.Fatalf("DEL of 41 keys: %d %v", n, err)
	}
	if _, err := RPush("many:l", make([]any, 30)...).Do(ctx, c); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("RPUSH of nil elements: %v, want ErrInvalidArg", err)
	}
}

// TestArgumentProblems checks when an unusable argument (a duration in a unit it is
// not a whole number of) fails a command: when it would be sent, whichever method or
// constructor gave it, and not once a later call of the same option replaced it.
func TestArgumentProblems(t *testing.T) {
	ms := 1500 * time.Microsecond
	for _, tc := range []struct {
		name string
		do   func(ctx context.Context, r Doer) error
		want []any // nil: refused with ErrInvalidArg, nothing sent
	}{
		{"bad expiration", func(ctx context.Context, r Doer) error {
			_, err := Set("k", "v").Expire(ms).Do(ctx, r)
			return err
		}, nil},
		{"bad, then a good one", func(ctx context.Context, r Doer) error {
			_, err := Set("k", "v").Expire(ms).Expire(time.Second).Do(ctx, r)
			return err
		}, []any{"SET", "k", "v", "EX", "1"}},
		{"bad, then none", func(ctx context.Context, r Doer) error {
			_, err := Set("k", "v").Expire(ms).Expire(0).Do(ctx, r)
			return err
		}, []any{"SET", "k", "v"}},
		{"bad, then another choice of the group", func(ctx context.Context, r Doer) error {
			_, err := Set("k", "v").Expire(ms).KeepTTL().Do(ctx, r)
			return err
		}, []any{"SET", "k", "v", "KEEPTTL"}},
		{"good, then bad", func(ctx context.Context, r Doer) error {
			_, err := Set("k", "v").Expire(time.Second).Expire(ms).Do(ctx, r)
			return err
		}, nil},
		{"bad in the constructor", func(ctx context.Context, r Doer) error {
			_, err := XClaim("s", "g", "c", ms, "0-1").Do(ctx, r)
			return err
		}, nil},
		{"bad in another option, the first replaced", func(ctx context.Context, r Doer) error {
			_, err := XClaim("s", "g", "c", ms, "0-1").Idle(ms).Idle(time.Second).Do(ctx, r)
			return err
		}, nil},
		{"bad option replaced, constructor good", func(ctx context.Context, r Doer) error {
			_, err := XClaim("s", "g", "c", time.Second, "0-1").Idle(ms).Idle(2*time.Second).Do(ctx, r)
			return err
		}, []any{"XCLAIM", "s", "g", "c", "1000", "0-1", "IDLE", "2000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			err := tc.do(context.Background(), &r)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidArg) {
					t.Errorf("err %v, want ErrInvalidArg", err)
				}
				if len(r.args) != 0 {
					t.Errorf("sent %v", r.args)
				}
				return
			}
			if errors.Is(err, ErrInvalidArg) {
				t.Fatal(err) // the recorder's OK may not decode as the reply: that is no matter
			}
			if len(r.args) != 1 || fmt.Sprint(r.args[0]) != fmt.Sprint(tc.want) {
				t.Errorf("sent %v, want %v", r.args, tc.want)
			}
		})
	}
}

// TestCachedCommandsAreCacheable runs every command that has a Cached method through
// the client-side cache: the core may refuse a reply (the key holds another type), but
// never the command as not cacheable, or the typed API would offer a method that
// cannot work.
func TestCachedCommandsAreCacheable(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	for _, f := range fewest {
		if f.cached == nil {
			continue
		}
		n++
		if err := f.cached(ctx, c); errors.Is(err, respire.ErrNotCacheable) {
			t.Errorf("%s has Cached, and the client refuses it: %v", f.name, err)
		}
	}
	if n < 50 {
		t.Errorf("only %d commands have Cached", n)
	}
}

// TestConnectionStateCommandsAreRefused checks that a typed command that would change
// a shared connection's state is refused as Client.Do refuses it.
func TestConnectionStateCommandsAreRefused(t *testing.T) {
	c := benchClient(t)
	ctx := context.Background()
	if _, err := Select(1).Do(ctx, c); !errors.Is(err, respire.ErrConnState) {
		t.Errorf("SELECT: %v, want ErrConnState", err)
	}
	if _, err := Subscribe("ch").Do(ctx, c); !errors.Is(err, respire.ErrConnState) {
		t.Errorf("SUBSCRIBE: %v, want ErrConnState", err)
	}
}
