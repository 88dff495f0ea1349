package cmds

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/cmdspec"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// newerCase is a case of a command newer than Redis 7.0, run on the generation that
// has it; cmd is the command's name in the specifications ("hgetex", "client|capa").
type newerCase struct {
	cmd string
	replyCase
}

// vectorSet is the vector-set module's command the vector cases need.
const vectorSet = "VADD"

// bothCases are the cases of the commands both Redis 8.6 and Valkey 9.1 added after
// Redis 7.0 and answer alike.
func bothCases() []newerCase {
	return []newerCase{
		{"client|kill", replyCase{name: "CLIENT KILL MAXAGE", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return decodeInt(ClientKill().NewFormat("MAXAGE", 1000000).Do(ctx, c))
		}, want: int64(0)}},
		{"hexpire", replyCase{name: "HEXPIRE", setup: [][]any{{"HSET", "n:h", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HExpire("n:h", time.Minute, "a", "b").Do(ctx, c))
		}, want: []int64{1, -2}}},
		{"hpexpire", replyCase{name: "HPEXPIRE", setup: [][]any{{"HSET", "n:hp", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HPExpire("n:hp", time.Minute, "a").Do(ctx, c))
		}, want: []int64{1}}},
		{"hexpireat", replyCase{name: "HEXPIREAT", setup: [][]any{{"HSET", "n:ha", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HExpireAt("n:ha", time.Unix(4102444800, 0), "a").Do(ctx, c))
		}, want: []int64{1}}},
		{"hpexpireat", replyCase{name: "HPEXPIREAT", setup: [][]any{{"HSET", "n:hpa", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HPExpireAt("n:hpa", time.UnixMilli(4102444800123), "a").Do(ctx, c))
		}, want: []int64{1}}},
		{"hexpiretime", replyCase{name: "HEXPIRETIME", setup: [][]any{{"HSET", "n:het", "a", "1"}, {"HEXPIREAT", "n:het", "4102444800", "FIELDS", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HExpireTime("n:het", "a", "b").Do(ctx, c))
		}, want: []int64{4102444800, -2}}},
		{"hpexpiretime", replyCase{name: "HPEXPIRETIME", setup: [][]any{{"HSET", "n:hpet", "a", "1"}, {"HEXPIREAT", "n:hpet", "4102444800", "FIELDS", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HPExpireTime("n:hpet", "a").Do(ctx, c))
		}, want: []int64{4102444800000}}},
		{"httl", replyCase{name: "HTTL without expiry", setup: [][]any{{"HSET", "n:ht", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HTTL("n:ht", "a").Do(ctx, c))
		}, want: []int64{-1}}},
		{"hpttl", replyCase{name: "HPTTL of a missing field", setup: [][]any{{"HSET", "n:hpt", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HPTTL("n:hpt", "b").Do(ctx, c))
		}, want: []int64{-2}}},
		{"hpersist", replyCase{name: "HPERSIST", setup: [][]any{{"HSET", "n:hps", "a", "1"}, {"HEXPIRE", "n:hps", "100", "FIELDS", "1", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HPersist("n:hps", "a").Do(ctx, c))
		}, want: []int64{1}}},
		{"hgetdel", replyCase{name: "HGETDEL", setup: [][]any{{"HSET", "n:hgd", "a", "1", "b", "2"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(HGetDel("n:hgd", "a", "c").Do(ctx, c))
		}, want: []Null[string]{{"1", true}, {}}}},
		{"client|no-touch", replyCase{name: "CLIENT NO-TOUCH", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(ClientNoTouch(ClientNoTouchOff).Do(ctx, c))
		}, want: "OK"}},
	}
}

// redis86Cases are the cases of the commands Redis added after 7.0, on Redis 8.6.
var redis86Cases = append(bothCases(), []newerCase{
	{"client|setinfo", replyCase{name: "CLIENT SETINFO", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ClientSetInfo().Libver("1.0").Do(ctx, c))
	}, want: "OK"}},
	{"delex", replyCase{name: "DELEX IFEQ", setup: [][]any{{"SET", "n:dx", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(DelEx("n:dx").IfEq("v").Do(ctx, c))
	}, want: true}},
	{"delex", replyCase{name: "DELEX IFNE not met", setup: [][]any{{"SET", "n:dxne", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(DelEx("n:dxne").IfNe("v").Do(ctx, c))
	}, want: false}},
	{"delex", replyCase{name: "DELEX IFDEQ with DIGEST", setup: [][]any{{"SET", "n:dxd", "hello"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		d, err := Digest("n:dxd").Do(ctx, c)
		if err != nil {
			return nil, err
		}
		return typed(DelEx("n:dxd").IfDEq(d).Do(ctx, c))
	}, want: true}},
	{"delex", replyCase{name: "DELEX IFDNE", setup: [][]any{{"SET", "n:dxdn", "hello"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(DelEx("n:dxdn").IfDNe("0000000000000000").Do(ctx, c))
	}, want: true}},
	{"digest", replyCase{name: "DIGEST missing is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(Digest("n:none").Do(ctx, c))
	}, wantErr: Nil}},
	{"digest", replyCase{name: "SET IFDEQ with DIGEST", setup: [][]any{{"SET", "n:sd", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		d, err := Digest("n:sd").Do(ctx, c)
		if err != nil {
			return nil, err
		}
		if _, err := Set("n:sd", "b").IfDEq(d).Do(ctx, c); err != nil {
			return nil, err
		}
		return typed(Get("n:sd").Do(ctx, c))
	}, want: "b"}},
	{"set", replyCase{name: "SET IFEQ", setup: [][]any{{"SET", "n:ifeq", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(Set("n:ifeq", "b").IfEq("a").Do(ctx, c))
	}, want: "OK"}},
	{"set", replyCase{name: "SET IFNE not met is Nil", setup: [][]any{{"SET", "n:ifne", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(Set("n:ifne", "b").IfNe("a").Do(ctx, c))
	}, wantErr: Nil}},
	{"set", replyCase{name: "SET IFDNE", setup: [][]any{{"SET", "n:ifdne", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(Set("n:ifdne", "b").IfDNe("0000000000000000").Do(ctx, c))
	}, want: "OK"}},
	{"bitop", replyCase{name: "BITOP DIFF", setup: [][]any{{"SET", "n:b1", "\xff"}, {"SET", "n:b2", "\x0f"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		if _, err := BitOp(BitOpDiff, "n:bd", "n:b1", "n:b2").Do(ctx, c); err != nil {
			return nil, err
		}
		return typed(Get("n:bd").Do(ctx, c))
	}, want: "\xf0"}},
	{"bitop", replyCase{name: "BITOP ONE", setup: [][]any{{"SET", "n:o1", "\x03"}, {"SET", "n:o2", "\x01"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(BitOp(BitOpOne, "n:bo", "n:o1", "n:o2").Do(ctx, c))
	}, want: int64(1)}},
	{"hexpireat", replyCase{name: "HEXPIREAT in the past deletes", setup: [][]any{{"HSET", "n:hap", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HExpireAt("n:hap", time.Unix(1, 0), "a").Do(ctx, c))
	}, want: []int64{2}}},
	{"hgetex", replyCase{name: "HGETEX EX", setup: [][]any{{"HSET", "n:hge", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HGetEx("n:hge", "a", "b").Expire(time.Minute).Do(ctx, c))
	}, want: []Null[string]{{"1", true}, {}}}},
	{"hsetex", replyCase{name: "HSETEX FNX PX", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HSetEx("n:hse", FieldValue{"a", "1"}, FieldValue{"b", 2}).FNX().Expire(1500*time.Millisecond).Do(ctx, c))
	}, want: true}},
	{"msetex", replyCase{name: "MSETEX NX EX", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(MSetEx(KeyValue{"n:m1", 1}, KeyValue{"n:m2", "x"}).NX().Expire(time.Minute).Do(ctx, c))
	}, want: true}},
	{"hotkeys|start", replyCase{name: "HOTKEYS START", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HotKeysStart(1).Cpu().Do(ctx, c))
	}, want: "OK"}},
	{"hotkeys|get", replyCase{name: "HOTKEYS GET", run: func(ctx context.Context, c *respire.Client) (any, error) {
		v, err := HotKeysGet().Do(ctx, c)
		if err != nil {
			return nil, err
		}
		// One report per node; its fields are left to resp.Value (see the package
		// documentation).
		es, err := v.Array()
		return len(es), err
	}, want: 1}},
	{"hotkeys|stop", replyCase{name: "HOTKEYS STOP", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HotKeysStop().Do(ctx, c))
	}, want: "OK"}},
	{"hotkeys|reset", replyCase{name: "HOTKEYS RESET", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HotKeysReset().Do(ctx, c))
	}, want: "OK"}},
	{"hotkeys|help", replyCase{name: "HOTKEYS HELP", run: func(ctx context.Context, c *respire.Client) (any, error) {
		h, err := HotKeysHelp().Do(ctx, c)
		return len(h) > 1, err
	}, want: true}},
	{"waitaof", replyCase{name: "WAITAOF", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(WaitAOF(0, 0, 0).Do(ctx, c))
	}, want: []int64{0, 0}}},
	{"xackdel", replyCase{name: "XACKDEL", setup: [][]any{{"XADD", "n:x", "1-1", "a", "1"}, {"XGROUP", "CREATE", "n:x", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "n:x", ">"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(XAckDel("n:x", "g", "1-1", "9-9").Do(ctx, c))
	}, want: []int64{1, -1}}},
	{"xdelex", replyCase{name: "XDELEX ACKED", setup: [][]any{{"XADD", "n:xd", "1-1", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(XDelEx("n:xd", "1-1", "9-9").Keepref().Do(ctx, c))
	}, want: []int64{1, -1}}},
	{"xcfgset", replyCase{name: "XCFGSET", setup: [][]any{{"XADD", "n:xc", "1-1", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(XCfgSet("n:xc").IDMPDurationToken(100).Do(ctx, c))
	}, want: "OK"}},
	{"zrank", replyCase{name: "ZRANK WITHSCORE", setup: [][]any{{"ZADD", "n:z", "1.5", "a", "2", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ZRankWithScore("n:z", "b").Do(ctx, c))
	}, want: RankScore{1, 2}}},
	{"zrevrank", replyCase{name: "ZREVRANK WITHSCORE", setup: [][]any{{"ZADD", "n:zr", "1.5", "a", "2", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ZRevRankWithScore("n:zr", "a").Do(ctx, c))
	}, want: RankScore{1, 1.5}}},
	{"zrank", replyCase{name: "ZRANK WITHSCORE missing is Nil", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ZRankWithScore("n:none", "a").Do(ctx, c))
	}, wantErr: Nil}},
	vector("vadd", "VADD", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VAdd("n:v2", VAddFP32, fp32(1, 0), "e").Do(ctx, c))
	}, true),
	vector("vadd", "VADD VALUES", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VAdd("n:v3", VAddValues, []float64{1, 0.5}, "e").Do(ctx, c))
	}, true),
	vector("vcard", "VCARD", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VCard("n:v").Do(ctx, c))
	}, int64(2)),
	vector("vdim", "VDIM", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VDim("n:v").Do(ctx, c))
	}, int64(2)),
	vector("vemb", "VEMB", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VEmb("n:v", "e1").Do(ctx, c))
	}, []float64{1, 0}),
	vector("vemb", "VEMB RAW", func(ctx context.Context, c *respire.Client) (any, error) {
		r, err := VEmbRaw("n:v", "e1").Do(ctx, c)
		return VectorRaw{Quantization: r.Quantization, Norm: r.Norm, Range: r.Range}, err
	}, VectorRaw{Quantization: "int8", Norm: 1, Range: 1}),
	vector("vgetattr", "VGETATTR", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VGetAttr("n:v", "e1").Do(ctx, c))
	}, `{"a":1}`),
	vector("vsetattr", "VSETATTR", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VSetAttr("n:v", "e2", `{"b":2}`).Do(ctx, c))
	}, true),
	vector("vinfo", "VINFO", func(ctx context.Context, c *respire.Client) (any, error) {
		i, err := VInfo("n:v").Do(ctx, c)
		return VectorSetInfo{QuantType: i.QuantType, Dim: i.Dim, Size: i.Size, HNSWM: i.HNSWM, Fields: map[string]string{"size": i.Fields["size"]}}, err
	}, VectorSetInfo{QuantType: "int8", Dim: 2, Size: 2, HNSWM: 16, Fields: map[string]string{"size": "2"}}),
	vector("vismember", "VISMEMBER", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VIsMember("n:v", "e3").Do(ctx, c))
	}, false),
	// The levels an element reaches are random, and so are the levels where e2 is a
	// neighbour of e1: the cases check the neighbours of every level together.
	vector("vlinks", "VLINKS", func(ctx context.Context, c *respire.Client) (any, error) {
		levels, err := VLinks("n:v", "e1").Do(ctx, c)
		return distinct(levels), err
	}, []string{"e2"}),
	vector("vlinks", "VLINKS WITHSCORES", func(ctx context.Context, c *respire.Client) (any, error) {
		levels, err := VLinksWithScores("n:v", "e1").Do(ctx, c)
		return distinct(levels), err
	}, []Z{{"e2", 0.5}}),
	vector("vrandmember", "VRANDMEMBER COUNT", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VRandMemberCount("n:v", -3).Do(ctx, c))
	}, nil),
	vector("vrandmember", "VRANDMEMBER missing is Nil", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VRandMember("n:none").Do(ctx, c))
	}, Nil),
	vector("vrange", "VRANGE", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VRange("n:v", "-", "+").Count(10).Do(ctx, c))
	}, []string{"e1", "e2"}),
	vector("vrem", "VREM", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VRem("n:v", "e3").Do(ctx, c))
	}, false),
	vector("vsim", "VSIM", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VSim("n:v", VSimEle, "e1").Do(ctx, c))
	}, []string{"e1", "e2"}),
	vector("vsim", "VSIM VALUES COUNT", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VSim("n:v", VSimValues, []float32{0, 1}).Count(1).Do(ctx, c))
	}, []string{"e2"}),
	vector("vsim", "VSIM FP32 WITHSCORES COUNT", func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(VSimWithScores("n:v", VSimFP32, fp32(1, 0)).Count(2).Do(ctx, c))
	}, []Z{{"e1", 1}, {"e2", 0.5}}),
}...)

// distinctt returns the elements of every level, each once, in the order first seen.
func distinct[T comparable](levels [][]T) []T {
	var out []T
	for _, l := range levels {
		for _, e := range l {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// fp32 is a vector as FP32 takes it: little-endian 32-bit floats.
func fp32(v ...float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

// vectorSetup is a vector set of two elements of two dimensions, e1 with attributes.
var vectorSetup = [][]any{
	{"VADD", "n:v", "VALUES", "2", "1", "0", "e1", "SETATTR", `{"a":1}`},
	{"VADD", "n:v", "VALUES", "2", "0", "1", "e2"},
}

// vector is a case of the vector-set module on vectorSetup: want is the reply, or the
// error it matches, or nil for a reply of three elements (VRANDMEMBER's).
func vector(cmd, name string, r func(context.Context, *respire.Client) (any, error), want any) newerCase {
	tc := replyCase{name: name, setup: vectorSetup, run: r, want: want, needs: vectorSet}
	switch w := want.(type) {
	case error:
		tc.want, tc.wantErr = nil, w
	case nil:
		tc.run = func(ctx context.Context, c *respire.Client) (any, error) {
			got, err := r(ctx, c)
			l, _ := got.([]string)
			return len(l), err
		}
		tc.want = 3
	}
	return newerCase{cmd, tc}
}

// valkey91Cases are the cases of the commands Valkey added after Redis 7.0, on
// Valkey 9.1.
var valkey91Cases = append(bothCases(), []newerCase{
	{"client|list", replyCase{name: "CLIENT LIST USER NOT-NAME", run: func(ctx context.Context, c *respire.Client) (any, error) {
		cs, err := ClientList().User("default").NotName("n:nobody").Do(ctx, c)
		return len(cs) > 0, err
	}, want: true}},
	{"geosearch", replyCase{name: "GEOSEARCH BYPOLYGON", setup: [][]any{{"GEOADD", "n:geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		rs, err := GeoSearch("n:geo").ByPolygon(4, 13, 38, 14, 38, 14, 39, 13, 39).Do(ctx, c)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, r := range rs {
			names = append(names, r.Member)
		}
		return names, nil
	}, want: []string{"Palermo"}}},
	{"client|capa", replyCase{name: "CLIENT CAPA", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ClientCAPA("redirect").Do(ctx, c))
	}, want: "OK"}},
	{"client|import-source", replyCase{name: "CLIENT IMPORT-SOURCE", setup: [][]any{{"CONFIG", "SET", "import-mode", "yes"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ClientImportSource(ClientImportSourceOff).Do(ctx, c))
	}, want: "OK"}},
	{"client|setinfo", replyCase{name: "CLIENT SETINFO", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ClientSetInfo().Libname("respire-test").Do(ctx, c))
	}, want: "OK"}},
	{"commandlog|get", replyCase{name: "COMMANDLOG GET large-request", setup: [][]any{{"CONFIG", "SET", "commandlog-request-larger-than", "10"}, {"SET", "n:cl", "a value longer than ten bytes"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		es, err := CommandLogGet(1, CommandLogGetLargeRequest).Do(ctx, c)
		if err != nil || len(es) != 1 {
			return es, err
		}
		return []any{es[0].Args, es[0].Value > 10}, nil
	}, want: []any{[]string{"SET", "n:cl", "a value longer than ten bytes"}, true}}},
	{"commandlog|len", replyCase{name: "COMMANDLOG LEN", setup: [][]any{{"COMMANDLOG", "RESET", "slow"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(CommandLogLen(CommandLogLenSlow).Do(ctx, c))
	}, want: int64(0)}},
	{"commandlog|reset", replyCase{name: "COMMANDLOG RESET", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(CommandLogReset(CommandLogResetLargeReply).Do(ctx, c))
	}, want: "OK"}},
	{"commandlog|help", replyCase{name: "COMMANDLOG HELP", run: func(ctx context.Context, c *respire.Client) (any, error) {
		h, err := CommandLogHelp().Do(ctx, c)
		return len(h) > 1, err
	}, want: true}},
	{"delifeq", replyCase{name: "DELIFEQ", setup: [][]any{{"SET", "n:die", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(DelIfEq("n:die", "v").Do(ctx, c))
	}, want: true}},
	{"delifeq", replyCase{name: "DELIFEQ of another value", setup: [][]any{{"SET", "n:dine", "v"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(DelIfEq("n:dine", "w").Do(ctx, c))
	}, want: false}},
	{"set", replyCase{name: "SET IFEQ", setup: [][]any{{"SET", "n:ifeq", "a"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(Set("n:ifeq", "b").IfEq("a").Do(ctx, c))
	}, want: "OK"}},
	{"hgetex", replyCase{name: "HGETEX PERSIST", setup: [][]any{{"HSET", "n:hge", "a", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HGetEx("n:hge", "a", "b").Persist().Do(ctx, c))
	}, want: []Null[string]{{"1", true}, {}}}},
	{"hsetex", replyCase{name: "HSETEX EX", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(HSetEx("n:hse", FieldValue{"a", "1"}).Expire(time.Minute).Do(ctx, c))
	}, want: true}},
	{"msetex", replyCase{name: "MSETEX PX", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(MSetEx(KeyValue{"n:m1", 1}, KeyValue{"n:m2", "x"}).Expire(1500*time.Millisecond).Do(ctx, c))
	}, want: true}},
	{"script|show", replyCase{name: "SCRIPT SHOW", run: func(ctx context.Context, c *respire.Client) (any, error) {
		sha, err := ScriptLoad("return 1").Do(ctx, c)
		if err != nil {
			return nil, err
		}
		return typed(ScriptShow(sha).Do(ctx, c))
	}, want: "return 1"}},
	{"waitaof", replyCase{name: "WAITAOF", run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(WaitAOF(0, 0, 0).Do(ctx, c))
	}, want: []int64{0, 0}}},
	{"zrank", replyCase{name: "ZRANK WITHSCORE", setup: [][]any{{"ZADD", "n:z", "1.5", "a", "2", "b"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ZRankWithScore("n:z", "a").Do(ctx, c))
	}, want: RankScore{0, 1.5}}},
}...)

// newerExempt are the newer commands no case here runs, and why: a slot migration
// between shards or replication, which the cases do not set up.
var newerExempt = map[string]string{
	"cluster|cancelslotmigrations": "needs a slot migration under way between two shards",
	"cluster|migrateslots":         "needs a cluster of two shards",
	"cluster|migration":            "needs a cluster of two shards",
	"cluster|syncslots":            "internal to slot migration between cluster nodes",
	"sflush":                       "Redis 8.6.3 does not register it, in cluster mode or not (unknown command)",
	"xidmprecord":                  "internal to replication: it records an entry the primary already added",
}

// TestRedis86Replies runs the commands Redis added after 7.0 on Redis 8.6, in RESP2
// and RESP3.
func TestRedis86Replies(t *testing.T) {
	runReplyCasesOn(t, testserver.StartGeneration(t, testserver.Redis86, testserver.Config{}), replyCases(redis86Cases))
}

// TestValkey91Replies runs the commands Valkey added after Redis 7.0 on Valkey 9.1,
// in RESP2 and RESP3.
func TestValkey91Replies(t *testing.T) {
	runReplyCasesOn(t, testserver.StartGeneration(t, testserver.Valkey91, testserver.Config{}), replyCases(valkey91Cases))
}

func replyCases(ncs []newerCase) []replyCase {
	out := make([]replyCase, len(ncs))
	for i, nc := range ncs {
		out[i] = nc.replyCase
	}
	return out
}

// specServer is one server's specification with the cases of its newer commands.
type specServer struct {
	dir      string
	commands []*cmdspec.Command
	cases    []newerCase
}

// readSpecServers reads both specifications; the test is skipped without them.
func readSpecServers(t *testing.T) []specServer {
	servers := []specServer{
		{dir: "redis-8.6.3", cases: slices.Concat(redis86Cases, redis86ClusterCases)},
		{dir: "valkey-9.1.2", cases: slices.Concat(valkey91Cases, valkey91ClusterCases, valkey91SentinelCases(0))},
	}
	for i := range servers {
		var err error
		if servers[i].commands, err = cmdspec.ReadDir(filepath.Join(specs, servers[i].dir)); err != nil {
			t.Skipf("the command specifications are not at %s: %v", specs, err)
		}
	}
	return servers
}

// TestNewerCommandsHaveCases reads both specifications and fails for every command
// newer than Redis 7.0 that has no case on the server that has it and no exemption,
// so that a command the specifications add is not silently left untested.
func TestNewerCommandsHaveCases(t *testing.T) {
	for _, srv := range readSpecServers(t) {
		covered := map[string]bool{}
		for _, c := range srv.cases {
			covered[c.cmd] = true
		}
		newer := 0
		for _, c := range srv.commands {
			if c.Container || !older("7.0.99", c.Since) {
				continue
			}
			newer++
			if _, ok := newerExempt[c.Name]; ok || covered[c.Name] {
				continue
			}
			t.Errorf("%s: %s (since %s) has no case and no exemption", srv.dir, strings.ToUpper(strings.ReplaceAll(c.Name, "|", " ")), c.Since)
		}
		if newer == 0 {
			t.Errorf("%s: no command newer than 7.0: the specifications were not read", srv.dir)
		}
	}
}

// redis86ClusterCases are the cases of the newer commands Redis 8.6 runs only in
// cluster mode, on a cluster of one master that serves every slot.
// clusterBothCases are the cases of the newer commands Redis 8.6 and Valkey 9.1 run
// only in cluster mode and answer alike.
func clusterBothCases() []newerCase {
	return []newerCase{
		{"cluster|myshardid", replyCase{name: "CLUSTER MYSHARDID", run: func(ctx context.Context, c *respire.Client) (any, error) {
			id, err := ClusterMyShardID().Do(ctx, c)
			return len(id), err
		}, want: 40}},
		{"cluster|slot-stats", replyCase{name: "CLUSTER SLOT-STATS SLOTSRANGE", run: func(ctx context.Context, c *respire.Client) (any, error) {
			v, err := ClusterSlotStats().Slotsrange(0, 1).Do(ctx, c)
			if err != nil {
				return nil, err
			}
			es, err := v.Array()
			return len(es), err
		}, want: 2}},
	}
}

var redis86ClusterCases = append(clusterBothCases(), []newerCase{
	// TRIMSLOTS drops the keys of slots the node does not serve: the case gives up
	// slot 16383 for the command and takes it back.
	{"trimslots", replyCase{name: "TRIMSLOTS", setup: [][]any{{"CLUSTER", "DELSLOTS", "16383"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		ok, err := TrimSlots(SlotRange{16383, 16383}).Do(ctx, c)
		if _, addErr := c.Do(ctx, "CLUSTER", "ADDSLOTS", "16383"); addErr != nil {
			return nil, addErr
		}
		return ok, err
	}, want: "OK"}},
}...)

// valkey91ClusterCases are the cases of the newer commands Valkey 9.1 runs only in
// cluster mode, on a cluster of one master that serves every slot.
var valkey91ClusterCases = append(clusterBothCases(), []newerCase{
	{"clusterscan", replyCase{name: "CLUSTERSCAN", setup: [][]any{{"SET", "n:cs", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		v, err := ClusterScan("0").Do(ctx, c)
		if err != nil {
			return nil, err
		}
		es, err := v.Array()
		return len(es), err
	}, want: 2}},
	{"cluster|flushslot", replyCase{name: "CLUSTER FLUSHSLOT", setup: [][]any{{"SET", "n:fs", "1"}}, run: func(ctx context.Context, c *respire.Client) (any, error) {
		return typed(ClusterFlushSlot(1).Do(ctx, c))
	}, want: "OK"}},
	{"cluster|getslotmigrations", replyCase{name: "CLUSTER GETSLOTMIGRATIONS", run: func(ctx context.Context, c *respire.Client) (any, error) {
		v, err := ClusterGetSlotMigrations().Do(ctx, c)
		if err != nil {
			return nil, err
		}
		es, err := v.Array()
		return len(es), err
	}, want: 0}},
}...)

// TestRedis86ClusterReplies runs the newer commands Redis 8.6 answers only in
// cluster mode, in RESP2 and RESP3.
func TestRedis86ClusterReplies(t *testing.T) {
	runReplyCasesOn(t, clusterNode(t, testserver.Redis86), replyCases(redis86ClusterCases))
}

// TestValkey91ClusterReplies runs the newer commands Valkey 9.1 answers only in
// cluster mode, in RESP2 and RESP3.
func TestValkey91ClusterReplies(t *testing.T) {
	runReplyCasesOn(t, clusterNode(t, testserver.Valkey91), replyCases(valkey91ClusterCases))
}

// clusterNode starts a cluster of generation name with one master and no replica,
// and returns that master, which serves every slot.
func clusterNode(t *testing.T, name string) *testserver.Server {
	bin, err := testserver.GenerationBinary(name)
	if errors.Is(err, testserver.ErrNotBuilt) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	cl := clusterserver.Start(t, clusterserver.Config{Masters: 1, NoReplicas: true, Server: testserver.Config{Binary: bin}})
	return cl.Nodes()[0].Server
}

// TestValkey91SentinelReplies runs the SENTINEL subcommands Valkey 9.1 added (the
// PRIMARY spellings) on a Valkey 9.1 Sentinel that monitors a Valkey 9.1 primary, in
// RESP2 and RESP3.
func TestValkey91SentinelReplies(t *testing.T) {
	primary := testserver.StartGeneration(t, testserver.Valkey91, testserver.Config{})
	bin, err := testserver.GenerationBinary(testserver.Valkey91)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	monitor := fmt.Sprintf("sentinel monitor p 127.0.0.1 %d 1\nsentinel down-after-milliseconds p 60000\n", primary.Port())
	if err := os.WriteFile(conf, []byte(monitor), 0o600); err != nil {
		t.Fatal(err)
	}
	sen := testserver.Start(t, testserver.Config{Binary: bin, ConfigFile: conf, Args: []string{"--sentinel"}})
	cases := valkey91SentinelCases(primary.Port())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := context.Background()
			c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{sen.Addr()}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					got, err := tc.run(ctx, c)
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
}

// valkey91SentinelCases are the cases of the SENTINEL subcommands Valkey 9.1 added,
// on a Sentinel that monitors the primary "p" at 127.0.0.1:port.
func valkey91SentinelCases(port int) []newerCase {
	return []newerCase{
		{"sentinel|primary", replyCase{name: "SENTINEL PRIMARY", run: func(ctx context.Context, c *respire.Client) (any, error) {
			m, err := SentinelPrimary("p").Do(ctx, c)
			return m["port"], err
		}, want: strconv.Itoa(port)}},
		{"sentinel|primaries", replyCase{name: "SENTINEL PRIMARIES", run: func(ctx context.Context, c *respire.Client) (any, error) {
			ms, err := SentinelPrimaries().Do(ctx, c)
			if len(ms) != 1 {
				return len(ms), err
			}
			return ms[0]["name"], err
		}, want: "p"}},
		{"sentinel|get-primary-addr-by-name", replyCase{name: "SENTINEL GET-PRIMARY-ADDR-BY-NAME", run: func(ctx context.Context, c *respire.Client) (any, error) {
			return typed(SentinelGetPrimaryAddrByName("p").Do(ctx, c))
		}, want: []string{"127.0.0.1", strconv.Itoa(port)}}},
		{"sentinel|is-primary-down-by-addr", replyCase{name: "SENTINEL IS-PRIMARY-DOWN-BY-ADDR", run: func(ctx context.Context, c *respire.Client) (any, error) {
			v, err := SentinelIsPrimaryDownByAddr("127.0.0.1", int64(port), 0, "*").Do(ctx, c)
			if err != nil {
				return nil, err
			}
			es, err := v.Array()
			return len(es), err
		}, want: 3}},
	}
}

// newerArgs are the commands older than Redis 7.1 that took arguments since, with the
// case that runs them, or why none does ("not run: ...").
var newerArgs = map[string]string{
	"set":               "SET IFEQ",
	"client|kill":       "CLIENT KILL MAXAGE",
	"client|list":       "CLIENT LIST USER NOT-NAME", // Valkey's filters are laid out alike
	"geosearch":         "GEOSEARCH BYPOLYGON",
	"geosearchstore":    "not run: BYPOLYGON is laid out as GEOSEARCH's",
	"bgsave":            "not run: CANCEL needs a background save under way",
	"cluster|replicate": "not run: NO-ONE needs a replica in a cluster",
	"cluster|setslot":   "not run: TIMEOUT needs a slot migration between shards",
	"sentinel|failover": "not run: COORDINATED needs Sentinels that monitor a primary with replicas",
	"script|debug":      "not run: ENGINE starts a script debugging session",
	"shutdown":          "not run: SAFE and FAILOVER stop the server",
}

// TestNewerArgumentsHaveCases reads both specifications and fails for every command
// older than 7.1 that took an argument since, on the server that has it, unless
// newerArgs names a case of that server that runs it or says why none does.
func TestNewerArgumentsHaveCases(t *testing.T) {
	for _, srv := range readSpecServers(t) {
		names := map[string]bool{}
		for _, c := range srv.cases {
			names[c.name] = true
		}
		for _, c := range srv.commands {
			if older("7.0.99", c.Since) || !newerArg(c.Args) {
				continue
			}
			switch want, ok := newerArgs[c.Name]; {
			case !ok:
				t.Errorf("%s: %s has arguments newer than 7.0 and no entry in newerArgs", srv.dir, c.Name)
			case !strings.HasPrefix(want, "not run: ") && !names[want]:
				t.Errorf("%s: %s: newerArgs names case %q, which this server's cases do not have", srv.dir, c.Name, want)
			}
		}
	}
}

// newerArg reports whether any of args, or of their nested arguments, came after 7.0.
func newerArg(args []*cmdspec.Arg) bool {
	for _, a := range args {
		if a.Since != "" && older("7.0.99", a.Since) || newerArg(a.Args) {
			return true
		}
	}
	return false
}
