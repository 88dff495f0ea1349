package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/respire/respire/resp"
)

func bulk(s string) resp.Value { return resp.BulkString(s) }
func num(n int64) resp.Value   { return resp.Integer(n) }

// shardNodeValue builds one node of CLUSTER SHARDS as a RESP3 map or a RESP2 array.
func shardNodeValue(resp3 bool, kv ...resp.Value) resp.Value {
	if resp3 {
		return resp.Map(kv...)
	}
	return resp.Array(kv...)
}

func shardsReply(resp3 bool) resp.Value {
	node := func(id, ip, endpoint string, port int64, role, health string) resp.Value {
		return shardNodeValue(resp3,
			bulk("id"), bulk(id), bulk("port"), num(port), bulk("ip"), bulk(ip),
			bulk("endpoint"), bulk(endpoint), bulk("role"), bulk(role),
			bulk("replication-offset"), num(42), bulk("health"), bulk(health))
	}
	shard := func(slots []resp.Value, nodes ...resp.Value) resp.Value {
		return shardNodeValue(resp3, bulk("slots"), resp.Array(slots...), bulk("nodes"), resp.Array(nodes...))
	}
	return resp.Array(
		shard([]resp.Value{num(0), num(5460), num(10000), num(10000)},
			node("a", "10.0.0.1", "10.0.0.1", 7000, "master", "online"),
			node("a1", "10.0.0.4", "10.0.0.4", 7003, "replica", "online")),
		shard([]resp.Value{num(5461), num(9999), num(10001), num(16383)},
			node("b1", "10.0.0.5", "?", 7004, "replica", "loading"),
			node("b", "", "", 7001, "master", "online")),
		// A master whose slots all moved away: still a node.
		shard(nil, node("c", "10.0.0.3", "node-c.example", 7002, "master", "online")),
	)
}

func TestParseShards(t *testing.T) {
	for _, resp3 := range []bool{false, true} {
		top, err := ParseShards(shardsReply(resp3), "192.168.1.9:7001", false)
		if err != nil {
			t.Fatalf("resp3=%v: %v", resp3, err)
		}
		if len(top.Shards) != 3 {
			t.Fatalf("%d shards", len(top.Shards))
		}
		a, b, c := top.Shards[0], top.Shards[1], top.Shards[2]
		if a.Master != (Node{ID: "a", Addr: "10.0.0.1:7000", Healthy: true}) || len(a.Replicas) != 1 || a.Replicas[0].Addr != "10.0.0.4:7003" {
			t.Fatalf("shard a: %+v", a)
		}
		if !slices.Equal(a.Slots, []SlotRange{{0, 5460}, {10000, 10000}}) {
			t.Fatalf("shard a slots: %v", a.Slots)
		}
		// Listed after its replica; no endpoint nor IP: the host of the node asked.
		if b.Master.Addr != "192.168.1.9:7001" || b.Master.ID != "b" {
			t.Fatalf("shard b master: %+v", b.Master)
		}
		// An unknown endpoint ("?") falls back to the IP; loading is not healthy.
		if len(b.Replicas) != 1 || b.Replicas[0].Addr != "10.0.0.5:7004" || b.Replicas[0].Healthy {
			t.Fatalf("shard b replicas: %+v", b.Replicas)
		}
		if c.Master.Addr != "node-c.example:7002" || len(c.Slots) != 0 {
			t.Fatalf("shard c: %+v", c)
		}
		if got := top.Covered(); got != SlotCount {
			t.Fatalf("covered %d slots", got)
		}
		if top.Owner(10000) != 0 || top.Owner(10001) != 1 || top.Owner(5461) != 1 {
			t.Fatal("Owner")
		}
		if got := top.Addrs(); !slices.Equal(got, []string{"10.0.0.1:7000", "192.168.1.9:7001", "node-c.example:7002", "10.0.0.4:7003", "10.0.0.5:7004"}) {
			t.Fatalf("Addrs: %v", got)
		}
	}
}

func TestParseShardsTLSPort(t *testing.T) {
	v := resp.Array(resp.Map(
		bulk("slots"), resp.Array(num(0), num(16383)),
		bulk("nodes"), resp.Array(resp.Map(
			bulk("id"), bulk("a"), bulk("port"), num(7000), bulk("tls-port"), num(8000),
			bulk("ip"), bulk("::1"), bulk("endpoint"), bulk("::1"), bulk("role"), bulk("master"), bulk("health"), bulk("online"),
		)),
	))
	for useTLS, want := range map[bool]string{false: "[::1]:7000", true: "[::1]:8000"} {
		top, err := ParseShards(v, "x:1", useTLS)
		if err != nil || top.Shards[0].Master.Addr != want {
			t.Fatalf("useTLS=%v: %+v %v, want %s", useTLS, top, err, want)
		}
	}
}

func TestParseSlots(t *testing.T) {
	node := func(host string, port int64, id string) resp.Value {
		return resp.Array(bulk(host), num(port), bulk(id), resp.Map())
	}
	v := resp.Array(
		resp.Array(num(0), num(5000), node("10.0.0.1", 7000, "a"), node("10.0.0.4", 7003, "a1")),
		resp.Array(num(5001), num(16383), node("", 7001, "b")),
		resp.Array(num(16383), num(16383), node("", 7001, "b")), // overlaps the range above
	)
	if _, err := ParseSlots(v, "10.0.0.9:7001"); !errors.Is(err, ErrTopology) {
		t.Fatalf("overlapping ranges: %v", err)
	}
	v = resp.Array(
		resp.Array(num(0), num(5000), node("10.0.0.1", 7000, "a"), node("10.0.0.4", 7003, "a1")),
		resp.Array(num(5001), num(10000), node("", 7001, "b")),
		resp.Array(num(10001), num(16383), node("10.0.0.1", 7000, "a"), node("10.0.0.4", 7003, "a1")),
	)
	top, err := ParseSlots(v, "10.0.0.9:7001")
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Shards) != 2 || top.Shards[0].Master.Addr != "10.0.0.1:7000" || len(top.Shards[0].Slots) != 2 ||
		len(top.Shards[0].Replicas) != 1 || top.Shards[1].Master.Addr != "10.0.0.9:7001" {
		t.Fatalf("%+v", top)
	}
	if top.Covered() != SlotCount {
		t.Fatalf("covered %d", top.Covered())
	}
}

func TestParseTopologyErrors(t *testing.T) {
	cases := map[string]resp.Value{
		"not an array":      bulk("x"),
		"shard not a map":   resp.Array(bulk("x")),
		"odd slot bounds":   resp.Array(resp.Map(bulk("slots"), resp.Array(num(1)), bulk("nodes"), resp.Array())),
		"slot out of range": resp.Array(resp.Map(bulk("slots"), resp.Array(num(0), num(SlotCount)), bulk("nodes"), resp.Array())),
		"reversed range":    resp.Array(resp.Map(bulk("slots"), resp.Array(num(9), num(3)), bulk("nodes"), resp.Array())),
		"no nodes":          resp.Array(resp.Map(bulk("slots"), resp.Array(num(0), num(1)))),
		"slots, no master":  resp.Array(resp.Map(bulk("slots"), resp.Array(num(0), num(1)), bulk("nodes"), resp.Array())),
		"node without port": resp.Array(resp.Map(bulk("nodes"), resp.Array(resp.Map(bulk("id"), bulk("a"))))),
	}
	for name, v := range cases {
		if _, err := ParseShards(v, "h:1", false); !errors.Is(err, ErrTopology) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, v := range map[string]resp.Value{
		"not an array":   bulk("x"),
		"short entry":    resp.Array(resp.Array(num(0), num(1))),
		"bad node":       resp.Array(resp.Array(num(0), num(1), bulk("x"))),
		"bad port":       resp.Array(resp.Array(num(0), num(1), resp.Array(bulk("h"), num(0)))),
		"range past end": resp.Array(resp.Array(num(0), num(SlotCount), resp.Array(bulk("h"), num(1)))),
	} {
		if _, err := ParseSlots(v, "h:1"); !errors.Is(err, ErrTopology) {
			t.Errorf("SLOTS %s: %v", name, err)
		}
	}
}

func TestResolveAddr(t *testing.T) {
	for _, c := range []struct{ addr, from, want string }{
		{"10.0.0.1:7000", "h:1", "10.0.0.1:7000"},
		{":7000", "10.0.0.2:7001", "10.0.0.2:7000"},
		{"?:7000", "[::1]:7001", "[::1]:7000"},
		{"garbage", "h:1", "garbage"},
	} {
		if got := ResolveAddr(c.addr, c.from); got != c.want {
			t.Errorf("ResolveAddr(%q, %q) = %q, want %q", c.addr, c.from, got, c.want)
		}
	}
}

func FuzzParseShards(f *testing.F) {
	for _, resp3 := range []bool{false, true} {
		b := resp.AppendValue(nil, shardsReply(resp3))
		f.Add(b)
	}
	f.Add([]byte("*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:99999\r\n$5\r\nnodes\r\n*0\r\n"))
	f.Fuzz(func(t *testing.T, wire []byte) {
		v, err := readValue(wire)
		if err != nil {
			return
		}
		top, err := ParseShards(v, "h:1", false)
		checkParsedTopology(t, top, err)
	})
}

func readValue(wire []byte) (resp.Value, error) {
	return resp.NewReader(bufio.NewReader(bytes.NewReader(wire)), resp.Limits{MaxBulkLen: 1 << 16, MaxDepth: 8, MaxAggregateLen: 1 << 12}).Read()
}
