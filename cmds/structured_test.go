package cmds

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
)

func TestStreamReplies(t *testing.T) {
	entries := func(key string) [][]any {
		return [][]any{{"XADD", key, "1-1", "a", "1"}, {"XADD", key, "1-2", "b", "2"}}
	}
	runReplyCases(t, []replyCase{
		{name: "XADD", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XAdd("x:add", FieldValue{"f", "v"}).ID("5-1").Do(ctx, c))
		}, want: "5-1"},
		{name: "XRANGE", setup: entries("x:s"), run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XRange("x:s", "-", "+").Do(ctx, c))
		}, want: []XMessage{{"1-1", map[string]string{"a": "1"}}, {"1-2", map[string]string{"b": "2"}}}},
		{name: "XREAD", setup: entries("x:r"), run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XRead(StreamID{"x:r", "1-1"}).Count(10).Do(ctx, c))
		}, want: []XStream{{"x:r", []XMessage{{"1-2", map[string]string{"b": "2"}}}}}},
		{name: "XREAD BLOCK timeout is Nil", setup: entries("x:b"), run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XRead(StreamID{"x:b", "$"}).Block(10*time.Millisecond).Do(ctx, c))
		}, wantErr: Nil},
		{name: "XREADGROUP", setup: append(entries("x:g"), []any{"XGROUP", "CREATE", "x:g", "g", "0"}), run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XReadGroup("g", "alice", StreamID{"x:g", ">"}).Count(1).Do(ctx, c))
		}, want: []XStream{{"x:g", []XMessage{{"1-1", map[string]string{"a": "1"}}}}}},
	})
}

func TestGeoReplies(t *testing.T) {
	places := [][]any{{"GEOADD", "geo:p", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}}
	runReplyCases(t, []replyCase{
		{name: "GEOADD", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(GeoAdd("geo:a", GeoLocation{13.361389, 38.115556, "Palermo"}).Do(ctx, c))
		}, want: int64(1)},
		{name: "GEODIST", setup: places, run: func(ctx context.Context, c *respire.Client) (any, error) {
			d, err := GeoDist("geo:p", "Palermo", "Catania").Unit(Kilometers).Do(ctx, c)
			return math.Round(d), err
		}, want: 166.0},
		{name: "GEOPOS", setup: places, run: func(ctx context.Context, c *respire.Client) (any, error) {
			ps, err := GeoPos("geo:p", "Palermo", "Nowhere").Do(ctx, c)
			if err != nil || len(ps) != 2 {
				return ps, err
			}
			return []any{math.Round(ps[0].V.Longitude), ps[0].Valid, ps[1].Valid}, nil
		}, want: []any{13.0, true, false}},
		{name: "GEOSEARCH", setup: places, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(GeoSearch("geo:p").FromLonLat(15, 37).ByRadius(200, Kilometers).Asc().Do(ctx, c))
		}, want: []GeoResult{{Member: "Catania"}, {Member: "Palermo"}}},
		{name: "GEOSEARCH WITHDIST WITHHASH WITHCOORD", setup: places, run: func(ctx context.Context, c *respire.Client) (any, error) {
			rs, err := GeoSearch("geo:p").FromMember("Palermo").ByRadius(1, Kilometers).WithDist().WithHash().WithCoord().Do(ctx, c)
			if err != nil || len(rs) != 1 {
				return rs, err
			}
			r := rs[0]
			return []any{r.Member, r.Dist, r.Hash != 0, math.Round(r.Latitude)}, nil
		}, want: []any{"Palermo", 0.0, true, 38.0}},
	})
}

func TestServerReplies(t *testing.T) {
	const lib = "#!lua name=typedlib\nredis.register_function{function_name='typedfn', callback=function() return 1 end, flags={'no-writes'}}"
	runReplyCases(t, []replyCase{
		{name: "CLIENT INFO", run: func(ctx context.Context, c *respire.Client) (any, error) {
			ci, err := ClientInfo().Do(ctx, c)
			return []any{ci.ID > 0, ci.Fields["id"] != "", ci.Addr != ""}, err
		}, want: []any{true, true, true}},
		{name: "CLIENT LIST", run: func(ctx context.Context, c *respire.Client) (any, error) {
			cs, err := ClientList().Do(ctx, c)
			return len(cs) > 0 && cs[0].ID > 0, err
		}, want: true},
		{name: "FUNCTION LIST", setup: [][]any{{"FUNCTION", "LOAD", "REPLACE", lib}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(FunctionList().LibraryName("typedlib").Do(ctx, c))
		}, want: []FunctionLibrary{{Name: "typedlib", Engine: "LUA", Functions: []Function{{Name: "typedfn", Flags: []string{"no-writes"}}}}}},
	})
}

// TestOptionInsideOption checks the options inside an option: XADD's trimming with its
// operator and limit, GEOSEARCH's COUNT with ANY, laid out where the specification
// puts them whatever the order of the methods.
func TestOptionInsideOption(t *testing.T) {
	for _, tc := range []struct {
		got  []any
		want string
	}{
		{XAdd("s", FieldValue{"f", "v"}).TrimLimit(10).AutoID().TrimOperator(XAddApproximately).Trim(XAddMaxLen, "100").Args(),
			"XADD s MAXLEN ~ 100 LIMIT 10 * f v"},
		{XAdd("s", FieldValue{"f", "v"}).TrimLimit(10).ID("1-1").Args(), "XADD s 1-1 f v"},
		{GeoSearch("g").CountAny().Count(3).FromMember("m").ByBox(1, 2, Miles).Args(),
			"GEOSEARCH g FROMMEMBER m BYBOX 1 2 mi COUNT 3 ANY"},
	} {
		var words []string
		for _, a := range tc.got {
			words = append(words, fmt.Sprint(a))
		}
		if got := strings.Join(words, " "); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func TestPopAndInfoReplies(t *testing.T) {
	stream := [][]any{{"XADD", "i:s", "1-1", "a", "1"}, {"XGROUP", "CREATE", "i:s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "i:s", ">"}}
	runReplyCases(t, []replyCase{
		{name: "BZPOPMIN", setup: [][]any{{"ZADD", "i:z", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BZPopMin([]string{"i:z"}, time.Second).Do(ctx, c))
		}, want: ZWithKey{"i:z", Z{"a", 1}}},
		{name: "BZPOPMIN timeout is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BZPopMin([]string{"i:none"}, 10*time.Millisecond).Do(ctx, c))
		}, wantErr: Nil},
		{name: "LMPOP", setup: [][]any{{"RPUSH", "i:l", "a", "b", "c"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LMPop([]string{"i:none", "i:l"}, Left).Count(2).Do(ctx, c))
		}, want: KeyValues{"i:l", []string{"a", "b"}}},
		{name: "ZMPOP", setup: [][]any{{"ZADD", "i:zm", "1", "a", "2", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZMPop([]string{"i:zm"}, ZMPopMax).Do(ctx, c))
		}, want: KeyZs{"i:zm", []Z{{"b", 2}}}},
		{name: "LPOS", setup: [][]any{{"RPUSH", "i:p", "a", "b", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPos("i:p", "a").Rank(2).Do(ctx, c))
		}, want: int64(2)},
		{name: "LPOS missing is Nil", setup: [][]any{{"RPUSH", "i:p2", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPos("i:p2", "z").Do(ctx, c))
		}, wantErr: Nil},
		{name: "LPOS COUNT", setup: [][]any{{"RPUSH", "i:pc", "a", "b", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(LPosCount("i:pc", "a", 0).Do(ctx, c))
		}, want: []int64{0, 2}},
		{name: "PUBSUB NUMSUB", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(PubSubNumSub("i:ch").Do(ctx, c))
		}, want: map[string]int64{"i:ch": 0}},
		{name: "XINFO GROUPS", setup: stream, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XInfoGroups("i:s").Do(ctx, c))
		}, want: []XGroupInfo{{Name: "g", Consumers: 1, Pending: 1, LastDeliveredID: "1-1", EntriesRead: 1, Lag: 0}}},
		// The stream the XINFO GROUPS case made.
		{name: "XINFO CONSUMERS", run: func(ctx context.Context, c *respire.Client) (any, error) {
			cs, err := XInfoConsumers("i:s", "g").Do(ctx, c)
			if err != nil || len(cs) != 1 {
				return cs, err
			}
			return []any{cs[0].Name, cs[0].Pending}, nil
		}, want: []any{"alice", int64(1)}},
		{name: "XINFO STREAM", run: func(ctx context.Context, c *respire.Client) (any, error) {
			s, err := XInfoStream("i:s").Do(ctx, c)
			return []any{s.Length, s.Groups, s.LastGeneratedID, s.FirstEntry}, err
		}, want: []any{int64(1), int64(1), "1-1", Null[XMessage]{XMessage{"1-1", map[string]string{"a": "1"}}, true}}},
	})
}

func TestRandomReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "HRANDFIELD", setup: [][]any{{"HSET", "r:h", "f", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HRandField("r:h").Do(ctx, c))
		}, want: "f"},
		{name: "HRANDFIELD missing is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HRandField("r:none").Do(ctx, c))
		}, wantErr: Nil},
		{name: "HRANDFIELD COUNT", setup: [][]any{{"HSET", "r:h2", "f", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HRandFieldCount("r:h2", 5).Do(ctx, c))
		}, want: []string{"f"}},
		{name: "HRANDFIELD WITHVALUES", setup: [][]any{{"HSET", "r:h3", "f", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HRandFieldWithValues("r:h3", 5).Do(ctx, c))
		}, want: []FieldValue{{"f", "v"}}},
		{name: "ZRANDMEMBER WITHSCORES", setup: [][]any{{"ZADD", "r:z", "1.5", "m"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ZRandMemberWithScores("r:z", 5).Do(ctx, c))
		}, want: []Z{{"m", 1.5}}},
	})
}

func TestPendingReplies(t *testing.T) {
	runReplyCases(t, []replyCase{
		{name: "XPENDING of an empty group", setup: [][]any{{"XADD", "pe:s", "1-1", "a", "1"}, {"XGROUP", "CREATE", "pe:s", "g", "0"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XPending("pe:s", "g").Do(ctx, c))
		}, want: XPendingSummary{Consumers: map[string]int64{}}},
		{name: "XPENDING", setup: [][]any{{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "pe:s", ">"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XPending("pe:s", "g").Do(ctx, c))
		}, want: XPendingSummary{1, "1-1", "1-1", map[string]int64{"bob": 1}}},
		{name: "XPENDING extended", run: func(ctx context.Context, c *respire.Client) (any, error) {
			es, err := XPendingExt("pe:s", "g", "-", "+", 10).Consumer("bob").Idle(0).Do(ctx, c)
			if err != nil || len(es) != 1 {
				return es, err
			}
			return []any{es[0].ID, es[0].Consumer, es[0].RetryCount}, nil
		}, want: []any{"1-1", "bob", int64(1)}},
	})
}

func TestBitReplies(t *testing.T) {
	bits := [][]any{{"SET", "b:k", "\xff\x00"}}
	runReplyCases(t, []replyCase{
		{name: "BITCOUNT", setup: bits, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BitCount("b:k").Do(ctx, c))
		}, want: int64(8)},
		{name: "BITCOUNT range", setup: bits, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BitCount("b:k").RangeEnd(0).Range(1).Do(ctx, c))
		}, want: int64(0)},
		{name: "BITCOUNT range in bits", setup: bits, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BitCount("b:k").Range(4).RangeEnd(11).RangeUnit(BitCountBit).Do(ctx, c))
		}, want: int64(4)},
		{name: "BITPOS", setup: bits, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BitPos("b:k", 0).Range(0).Do(ctx, c))
		}, want: int64(8)},
	})
}

func TestClaimAndMiscReplies(t *testing.T) {
	pending := [][]any{{"XADD", "cl:s", "1-1", "a", "1"}, {"XGROUP", "CREATE", "cl:s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "cl:s", ">"}}
	runReplyCases(t, []replyCase{
		{name: "XCLAIM", setup: pending, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XClaim("cl:s", "g", "bob", 0, "1-1").Do(ctx, c))
		}, want: []XMessage{{"1-1", map[string]string{"a": "1"}}}},
		{name: "XCLAIM JUSTID", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XClaimJustID("cl:s", "g", "carol", 0, "1-1").Do(ctx, c))
		}, want: []string{"1-1"}},
		{name: "XAUTOCLAIM", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XAutoClaim("cl:s", "g", "dave", 0, "0-0").Do(ctx, c))
		}, want: XAutoClaimResult{"0-0", []XMessage{{"1-1", map[string]string{"a": "1"}}}, []string{}}},
		{name: "XAUTOCLAIM JUSTID", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(XAutoClaimJustID("cl:s", "g", "erin", 0, "0-0").Count(10).Do(ctx, c))
		}, want: XAutoClaimIDs{"0-0", []string{"1-1"}, []string{}}},
		{name: "BITFIELD", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(BitField("cl:b").Operation("SET", "u8", 0, 200, "OVERFLOW", "FAIL", "INCRBY", "u8", 0, 100, "GET", "u8", 0).Do(ctx, c))
		}, want: []Null[int64]{{0, true}, {}, {200, true}}},
		{name: "SLOWLOG GET", setup: [][]any{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"SET", "cl:slow", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			es, err := SlowLogGet().Count(1).Do(ctx, c)
			if err != nil || len(es) != 1 {
				return es, err
			}
			return es[0].ID > 0 && len(es[0].Args) > 0 && es[0].ClientAddr != "", nil
		}, want: true},
	})
}
