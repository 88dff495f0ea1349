package integration

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// Server generations the machine cannot install are reached through the emulator,
// which answers as that server in front of a real Redis 7 (test/emulator).

// A standalone Redis 6.0: RESP3 and RESP2 handshakes, commands and scripts.
func TestRedis6Standalone(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	emu := emulator.Start(t, emulator.Config{Backend: srv.Addr(), Profile: emulator.Redis60})
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			srv.Do(t, "SCRIPT", "FLUSH")
			c := testclient.New(t, respire.Options{Addrs: []string{emu.Addr()}, Protocol: proto})
			if _, err := c.Do(ctx, "SET", "k6", "v"); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Do(ctx, "GET", "k6"); err != nil || text(v) != "v" {
				t.Fatalf("GET = %v, %v", v, err)
			}
			cn, err := link.Of(c).Conn(ctx, route.SharedLane, "k6")
			if err != nil {
				t.Fatal(err)
			}
			if name, version := cn.Server(); name != "redis" || version != "6.0.16" || cn.Protocol() != proto {
				t.Fatalf("connected to %s %s over RESP%d", name, version, cn.Protocol())
			}
			s := respire.NewScript("return redis.call('GET', KEYS[1])")
			if v, err := s.Run(ctx, c, []string{"k6"}); err != nil || text(v) != "v" {
				t.Fatalf("script = %v, %v", v, err)
			}
		})
	}
}

// text is v's text, or "" when it has none.
func text(v resp.Value) string {
	s, _ := v.Text()
	return s
}

// A Redis 6.0 Cluster: it has no CLUSTER SHARDS, so the topology comes from CLUSTER
// SLOTS, and every slot is served.
func TestRedis6Cluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	seeds := cl.Seeds()
	emus := emulator.StartCluster(t, seeds, []emulator.Profile{emulator.Redis60, emulator.Redis60, emulator.Redis60})
	ctx := context.Background()
	c := testclient.New(t, respire.Options{Addrs: []string{emus[0].Addr(), emus[1].Addr()}, Cluster: true})
	var shards, slots int64
	for _, e := range emus {
		shards += e.Count("CLUSTER SHARDS")
		slots += e.Count("CLUSTER SLOTS")
	}
	if shards == 0 || slots == 0 {
		t.Fatalf("topology: %d CLUSTER SHARDS, %d CLUSTER SLOTS; want SLOTS after SHARDS", shards, slots)
	}
	s := respire.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	for _, k := range clusterserver.SampleKeys(24, "six:") {
		if _, err := c.Do(ctx, "SET", k, k); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if got := owner(t, cl, k); got != k {
			t.Fatalf("%s holds %q on its master", k, got)
		}
		if _, err := s.Run(ctx, c, []string{k}, k+"!"); err != nil {
			t.Fatalf("script on %s: %v", k, err)
		}
		cn, err := link.Of(c).Conn(ctx, route.SharedLane, k)
		if err != nil {
			t.Fatal(err)
		}
		if _, version := cn.Server(); version != "6.0.16" {
			t.Fatalf("%s: connection to a server of version %q, not an emulator", k, version)
		}
	}
}

// KeyPrefix reaches the keys of commands the Redis 7.0 table did not know: DELEX of
// Redis 8.4 (emulated in front of Redis 7), with and without a condition.
func TestPrefixOfNewerCommands(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	emu := emulator.Start(t, emulator.Config{Backend: srv.Addr(), Profile: emulator.Redis84})
	ctx := context.Background()
	c := testclient.New(t, respire.Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:"})
	srv.Do(t, "SET", "k", "v")
	for _, cmd := range [][]any{{"DELEX", "k", "IFEQ", "v"}, {"DELEX", "k"}} {
		srv.Do(t, "SET", "app:k", "v")
		v, err := c.Do(ctx, cmd...)
		if n, _ := v.Int(); err != nil || n != 1 {
			t.Fatalf("%v = %v, %v", cmd, v, err)
		}
		if got := srv.Do(t, "EXISTS", "app:k"); got != "0" {
			t.Fatalf("%v: app:k is still there", cmd)
		}
		if got := srv.Do(t, "EXISTS", "k"); got != "1" {
			t.Fatalf("%v deleted the unprefixed key", cmd)
		}
	}
}

// A Redis 6.0 master found through a Sentinel (which monitors the emulator, so the
// address it gives is the emulator's): discovery, the ROLE check and commands.
func TestRedis6Sentinel(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	emu := emulator.Start(t, emulator.Config{Backend: srv.Addr(), Profile: emulator.Redis60})
	_, portText, err := net.SplitHostPort(emu.Addr())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portText)
	sen := sentinelserver.StartLoneSentinel(t, "six", port)
	ctx := context.Background()
	for _, proto := range []int{3, 2} {
		c := testclient.New(t, respire.Options{Addrs: []string{sen.Addr()}, SentinelMaster: "six", Protocol: proto})
		if _, err := c.Do(ctx, "SET", "s6", "v"); err != nil {
			t.Fatal(err)
		}
		if got := srv.Do(t, "GET", "s6"); got != "v" {
			t.Fatalf("RESP%d: the master holds %q", proto, got)
		}
		cn, err := link.Of(c).Conn(ctx, route.SharedLane, "s6")
		if err != nil {
			t.Fatal(err)
		}
		if _, version := cn.Server(); version != "6.0.16" || cn.Addr() != emu.Addr() {
			t.Fatalf("RESP%d: connected to %s, version %q", proto, cn.Addr(), version)
		}
	}
}
