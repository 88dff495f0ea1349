package cmds

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// replyCase runs one typed command after setup (raw commands) and checks its typed
// reply or its error.
type replyCase struct {
	name    string
	setup   [][]any
	run     func(ctx context.Context, c *respire.Client) (any, error)
	want    any
	wantErr error
	since   string // the server version that added the command; older servers skip it
	needs   string // a command the server must have (a module's), else the case is skipped
}

// typed adapts a typed Do to replyCase.run.
func typed[T any](v T, err error) (any, error) { return v, err }

// forEachProtocol runs fn with a client of each protocol on one server, flushed
// between them.
func forEachProtocol(t *testing.T, fn func(t *testing.T, c *respire.Client, version string)) {
	forEachProtocolOn(t, testserver.Start(t, testserver.Config{}), fn)
}

// forEachProtocolOn is forEachProtocol on a server the caller started.
func forEachProtocolOn(t *testing.T, srv *testserver.Server, fn func(t *testing.T, c *respire.Client, version string)) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := context.Background()
			c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if _, err := FlushAll().Do(ctx, c); err != nil {
				t.Fatal(err)
			}
			info, err := Info("server").Do(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, c, serverVersion(info))
		})
	}
}

// serverVersion finds redis_version in an INFO reply.
func serverVersion(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}

// older reports whether version a is older than b ("7.0.15" < "7.2.0").
func older(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

func runReplyCases(t *testing.T, cases []replyCase) {
	t.Helper()
	runReplyCasesOn(t, testserver.Start(t, testserver.Config{}), cases)
}

// runReplyCasesOn is runReplyCases on a server the caller started.
func runReplyCasesOn(t *testing.T, srv *testserver.Server, cases []replyCase) {
	t.Helper()
	forEachProtocolOn(t, srv, func(t *testing.T, c *respire.Client, version string) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if tc.since != "" && older(version, tc.since) {
					t.Skipf("%s needs a server of %s or later, this one is %s", tc.name, tc.since, version)
				}
				if tc.needs != "" {
					info, err := c.Do(ctx, "COMMAND", "INFO", tc.needs)
					if err != nil {
						t.Fatal(err)
					}
					if es, _ := info.Array(); len(es) != 1 || es[0].IsNull() {
						t.Skipf("%s needs %s, which this server (%s) was built without", tc.name, tc.needs, version)
					}
				}
				for _, args := range tc.setup {
					if _, err := c.Do(ctx, args...); err != nil {
						t.Fatalf("setup %v: %v", args, err)
					}
				}
				got, err := tc.run(ctx, c)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("err %v, want %v", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %#v, want %#v", got, tc.want)
				}
			})
		}
	})
}

func TestStringReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "SET", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Set("s:set", "v").Do(ctx, c))
		}, want: "OK"},
		{name: "SET NX refused is Nil", setup: [][]any{{"SET", "s:nx", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Set("s:nx", "w").NX().Do(ctx, c))
		}, wantErr: Nil},
		{name: "SET GET returns the old value", setup: [][]any{{"SET", "s:get", "old"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Set("s:get", "new").Get().Expire(1500*time.Millisecond).Do(ctx, c))
		}, want: "old"},
		{name: "GET", setup: [][]any{{"SET", "s:k", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Get("s:k").Do(ctx, c))
		}, want: "v"},
		{name: "GET missing is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Get("s:missing").Do(ctx, c))
		}, wantErr: Nil},
		{name: "INCRBY", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(IncrBy("s:n", 5).Do(ctx, c))
		}, want: int64(5)},
		{name: "INCRBYFLOAT", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(IncrByFloat("s:f", 1.5).Do(ctx, c))
		}, want: 1.5},
		{name: "MGET with a missing key", setup: [][]any{{"SET", "s:m1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(MGet("s:m1", "s:m2").Do(ctx, c))
		}, want: []Null[string]{{"a", true}, {}}},
		{name: "MSET", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(MSet(KeyValue{"s:a", 1}, KeyValue{"s:b", []byte("x")}).Do(ctx, c))
		}, want: "OK"},
		{name: "SETNX", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SetNX("s:setnx", "v").Do(ctx, c))
		}, want: true},
		{name: "STRLEN", setup: [][]any{{"SET", "s:len", "four"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(StrLen("s:len").Do(ctx, c))
		}, want: int64(4)},
		{name: "GETEX", setup: [][]any{{"SET", "s:getex", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(GetEx("s:getex").Expire(time.Minute).Do(ctx, c))
		}, want: "v"},
	})
}

func TestHashReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "HSET", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HSet("h:set", FieldValue{"a", 1}, FieldValue{"b", "x"}).Do(ctx, c))
		}, want: int64(2)},
		{name: "HGETALL", setup: [][]any{{"HSET", "h:all", "a", "1", "b", "2"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HGetAll("h:all").Do(ctx, c))
		}, want: map[string]string{"a": "1", "b": "2"}},
		{name: "HGETALL missing is empty", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HGetAll("h:none").Do(ctx, c))
		}, want: map[string]string{}},
		{name: "HGET missing field is Nil", setup: [][]any{{"HSET", "h:get", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HGet("h:get", "b").Do(ctx, c))
		}, wantErr: Nil},
		{name: "HMGET", setup: [][]any{{"HSET", "h:m", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HMGet("h:m", "a", "b").Do(ctx, c))
		}, want: []Null[string]{{"1", true}, {}}},
		{name: "HEXISTS", setup: [][]any{{"HSET", "h:e", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HExists("h:e", "a").Do(ctx, c))
		}, want: true},
		{name: "HINCRBYFLOAT", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HIncrByFloat("h:f", "x", 2.25).Do(ctx, c))
		}, want: 2.25},
		{name: "HKEYS", setup: [][]any{{"HSET", "h:k", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HKeys("h:k").Do(ctx, c))
		}, want: []string{"a"}},
		{name: "HSCAN", setup: [][]any{{"HSET", "h:scan", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HScan("h:scan", 0).Do(ctx, c))
		}, want: ScanPage{Cursor: 0, Elems: []string{"a", "1"}}},
	})
}

func TestListReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "RPUSH", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(RPush("l:push", "a", []byte("b"), 3).Do(ctx, c))
		}, want: int64(3)},
		{name: "LRANGE", setup: [][]any{{"RPUSH", "l:r", "a", "b", "c"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LRange("l:r", 0, -1).Do(ctx, c))
		}, want: []string{"a", "b", "c"}},
		{name: "LPOP", setup: [][]any{{"RPUSH", "l:p", "a", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPop("l:p").Do(ctx, c))
		}, want: "a"},
		{name: "LPOP empty is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPop("l:none").Do(ctx, c))
		}, wantErr: Nil},
		{name: "LPOP COUNT", setup: [][]any{{"RPUSH", "l:pc", "a", "b", "c"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPopCount("l:pc", 2).Do(ctx, c))
		}, want: []string{"a", "b"}},
		{name: "BLPOP", setup: [][]any{{"RPUSH", "l:b", "x"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BLPop([]string{"l:b"}, time.Second).Do(ctx, c))
		}, want: []string{"l:b", "x"}},
		{name: "BLPOP timeout is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BLPop([]string{"l:empty"}, 10*time.Millisecond).Do(ctx, c))
		}, wantErr: Nil},
		{name: "LMOVE", setup: [][]any{{"RPUSH", "l:src", "a", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LMove("l:src", "l:dst", Right, Left).Do(ctx, c))
		}, want: "b"},
		{name: "LINSERT", setup: [][]any{{"RPUSH", "l:ins", "a", "c"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LInsert("l:ins", LInsertBefore, "c", "b").Do(ctx, c))
		}, want: int64(3)},
	})
}

func TestSetReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "SADD", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SAdd("st:a", "x", "y", "x").Do(ctx, c))
		}, want: int64(2)},
		{name: "SMEMBERS", setup: [][]any{{"SADD", "st:m", "x"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SMembers("st:m").Do(ctx, c))
		}, want: []string{"x"}},
		{name: "SISMEMBER", setup: [][]any{{"SADD", "st:i", "x"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SIsMember("st:i", "y").Do(ctx, c))
		}, want: false},
		{name: "SMISMEMBER", setup: [][]any{{"SADD", "st:mi", "x"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SMIsMember("st:mi", "x", "y").Do(ctx, c))
		}, want: []bool{true, false}},
		{name: "SPOP missing is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SPop("st:none").Do(ctx, c))
		}, wantErr: Nil},
		{name: "SSCAN", setup: [][]any{{"SADD", "st:scan", "x"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SScan("st:scan", 0).Match("*").Do(ctx, c))
		}, want: ScanPage{Cursor: 0, Elems: []string{"x"}}},
	})
}

func TestSortedSetReplies(t *testing.T) {
	board := [][]any{{"ZADD", "z:b", "1.5", "a", "2", "b"}}
	runReplyCases(t, []replyCase{
		{name: "ZADD", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZAdd("z:add", Z{"a", 1}, Z{"b", 2.5}).Do(ctx, c))
		}, want: int64(2)},
		{name: "ZADD NX refused counts nothing", setup: [][]any{{"ZADD", "z:nx", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZAdd("z:nx", Z{"a", 2}).NX().Do(ctx, c))
		}, want: int64(0)},
		{name: "ZADD INCR", setup: [][]any{{"ZADD", "z:incr", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZAddIncr("z:incr", Z{"a", 0.5}).Do(ctx, c))
		}, want: 1.5},
		{name: "ZRANGE", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRange("z:b", "0", "-1").Do(ctx, c))
		}, want: []string{"a", "b"}},
		{name: "ZRANGE WITHSCORES", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRangeWithScores("z:b", "0", "-1").Do(ctx, c))
		}, want: []Z{{"a", 1.5}, {"b", 2}}},
		{name: "ZRANGE BYSCORE REV LIMIT WITHSCORES", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRangeWithScores("z:b", "+inf", "-inf").ByScore().Rev().Limit(0, 1).Do(ctx, c))
		}, want: []Z{{"b", 2}}},
		{name: "ZREVRANGEBYSCORE WITHSCORES", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRevRangeByScoreWithScores("z:b", "+inf", "-inf").Do(ctx, c))
		}, want: []Z{{"b", 2}, {"a", 1.5}}},
		{name: "ZSCORE", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZScore("z:b", "a").Do(ctx, c))
		}, want: 1.5},
		{name: "ZSCORE missing is Nil", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZScore("z:b", "zz").Do(ctx, c))
		}, wantErr: Nil},
		{name: "ZMSCORE", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZMScore("z:b", "b", "zz").Do(ctx, c))
		}, want: []Null[float64]{{2, true}, {}}},
		{name: "ZPOPMIN", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZPopMin("z:b").Do(ctx, c))
		}, want: []Z{{"a", 1.5}}},
		{name: "ZPOPMAX COUNT", setup: [][]any{{"ZADD", "z:p", "1", "a", "2", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZPopMax("z:p").Count(2).Do(ctx, c))
		}, want: []Z{{"b", 2}, {"a", 1}}},
		{name: "ZRANK", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRank("z:b", "b").Do(ctx, c))
		}, want: int64(1)},
		{name: "ZUNION WITHSCORES", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZUnionWithScores("z:b").Do(ctx, c))
		}, want: []Z{{"a", 1.5}, {"b", 2}}},
		{name: "ZINCRBY", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZIncrBy("z:b", 1, "a").Do(ctx, c))
		}, want: 2.5},
		{name: "ZINCRBY by a fraction", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZIncrBy("z:b", 0.25, "a").Do(ctx, c))
		}, want: 1.75},
		{name: "ZUNION WEIGHTS of fractions", setup: board, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZUnionWithScores("z:b").Weights(0.5).Do(ctx, c))
		}, want: []Z{{"a", 0.75}, {"b", 1}}},
		{name: "ZSCAN", setup: [][]any{{"ZADD", "z:scan", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZScan("z:scan", 0).Do(ctx, c))
		}, want: ScanPage{Cursor: 0, Elems: []string{"a", "1"}}},
	})
}

func TestGenericReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "DEL", setup: [][]any{{"SET", "g:a", "1"}, {"SET", "g:b", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Del("g:a", "g:b", "g:c").Do(ctx, c))
		}, want: int64(2)},
		{name: "EXISTS", setup: [][]any{{"SET", "g:e", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Exists("g:e", "g:e", "g:none").Do(ctx, c))
		}, want: int64(2)},
		{name: "EXPIRE", setup: [][]any{{"SET", "g:x", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Expire("g:x", time.Minute).Do(ctx, c))
		}, want: true},
		{name: "EXPIRE of a fraction of a second is refused", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Expire("g:x", 1500*time.Millisecond).Do(ctx, c))
		}, wantErr: ErrInvalidArg},
		{name: "TTL without expiry", setup: [][]any{{"SET", "g:t", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(TTL("g:t").Do(ctx, c))
		}, want: int64(-1)},
		{name: "TYPE", setup: [][]any{{"RPUSH", "g:l", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Type("g:l").Do(ctx, c))
		}, want: "list"},
		{name: "SCAN", setup: [][]any{{"SET", "g:scan:1", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Scan(0).Match("g:scan:*").Count(1000).Do(ctx, c))
		}, want: ScanPage{Cursor: 0, Elems: []string{"g:scan:1"}}},
		{name: "KEYS", setup: [][]any{{"SET", "g:keys:1", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Keys("g:keys:*").Do(ctx, c))
		}, want: []string{"g:keys:1"}},
	})
}

func TestScriptingAndPubSubReplies(t *testing.T) {
	const script = "return {KEYS[1], ARGV[1]}"
	runReplyCases(t, []replyCase{
		{name: "EVAL", run: func(ctx context.Context, c *respire.Client) (any, error) {
			v, err := Eval(script, []string{"sc:k"}, "a").Do(ctx, c)
			if err != nil {
				return nil, err
			}
			return decodeStrings(v, nil)
		}, want: []string{"sc:k", "a"}},
		{name: "SCRIPT LOAD and EVALSHA", run: func(ctx context.Context, c *respire.Client) (any, error) {
			sha, err := ScriptLoad(script).Do(ctx, c)
			if err != nil {
				return nil, err
			}
			v, err := EvalSha(sha, []string{"sc:k"}, "b").Do(ctx, c)
			if err != nil {
				return nil, err
			}
			return decodeStrings(v, nil)
		}, want: []string{"sc:k", "b"}},
		{name: "SCRIPT EXISTS", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ScriptExists("0000000000000000000000000000000000000000").Do(ctx, c))
		}, want: []bool{false}},
		{name: "PUBLISH", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Publish("ps:ch", "hello").Do(ctx, c))
		}, want: int64(0)},
		{name: "PUBSUB CHANNELS", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(PubSubChannels().Pattern("ps:none:*").Do(ctx, c))
		}, want: []string{}},
		{name: "CONFIG GET", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ConfigGet("maxmemory-policy").Do(ctx, c))
		}, want: map[string]string{"maxmemory-policy": "noeviction"}},
		{name: "HGETEX", since: "8.0.0", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HGetEx("h:ex", "a").Do(ctx, c))
		}, want: []Null[string]{{}}},
	})
}

func TestSortReplies(t *testing.T) {
	list := [][]any{{"RPUSH", "so:l", "3", "1", "2"}}
	runReplyCases(t, []replyCase{
		{name: "SORT", setup: list, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Sort("so:l").Desc().Limit(0, 2).Do(ctx, c))
		}, want: []Null[string]{{"3", true}, {"2", true}}},
		{name: "SORT GET of a missing key", setup: [][]any{{"RPUSH", "so:g", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(Sort("so:g").Get("so:none:*").Do(ctx, c))
		}, want: []Null[string]{{}}},
		{name: "SORT STORE", setup: [][]any{{"RPUSH", "so:s", "b", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SortStore("so:s", "so:dst").Alpha().Do(ctx, c))
		}, want: int64(2)},
	})
}

func TestLCSReplies(t *testing.T) {
	pair := [][]any{{"MSET", "lcs:a", "ohmytext", "lcs:b", "mynewtext"}}
	runReplyCases(t, []replyCase{
		{name: "LCS", setup: pair, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LCS("lcs:a", "lcs:b").Do(ctx, c))
		}, want: "mytext"},
		{name: "LCS LEN", setup: pair, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LCSLen("lcs:a", "lcs:b").Do(ctx, c))
		}, want: int64(6)},
		{name: "LCS IDX", setup: pair, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LCSIdx("lcs:a", "lcs:b").MinMatchLen(4).WithMatchLen().Do(ctx, c))
		}, want: LCSMatches{Matches: []LCSMatch{{A: LCSRange{4, 7}, B: LCSRange{5, 8}, MatchLen: 4}}, Len: 6}},
		{name: "LCS IDX without WITHMATCHLEN", setup: pair, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LCSIdx("lcs:a", "lcs:b").Do(ctx, c))
		}, want: LCSMatches{Matches: []LCSMatch{{A: LCSRange{4, 7}, B: LCSRange{5, 8}}, {A: LCSRange{2, 3}, B: LCSRange{0, 1}}}, Len: 6}},
	})
}
