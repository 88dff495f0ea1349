package emulator

import (
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
)

// In front of a cluster, every address a client is told is an emulator's: topology
// replies and redirections, forwarded or produced by an emulated command; and an
// emulated command after ASKING runs on the importing node.
func TestClusterAddressRewriting(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true, Masters: 2})
	nodes := cl.Nodes()
	emus := StartCluster(t, cl.Seeds(), []Profile{Redis84, Redis84})
	byBackend := map[string]*Emulator{}
	emuAddrs := map[string]bool{}
	for i, n := range nodes {
		byBackend[n.Addr()] = emus[i]
		emuAddrs[emus[i].Addr()] = true
	}
	for _, proto := range []string{"2", "3"} {
		c := dialRaw(t, emus[0].Addr())
		c.value("HELLO", proto)

		shards := c.value("CLUSTER", "SHARDS")
		top, err := cluster.ParseShards(shards, emus[0].Addr(), false)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range top.Addrs() {
			if !emuAddrs[a] {
				t.Fatalf("RESP%s: CLUSTER SHARDS names %s, not an emulator (%v)", proto, a, shards)
			}
		}
		slots, err := cluster.ParseSlots(c.value("CLUSTER", "SLOTS"), emus[0].Addr())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range slots.Addrs() {
			if !emuAddrs[a] {
				t.Fatalf("RESP%s: CLUSTER SLOTS names %s", proto, a)
			}
		}
		text, _ := c.value("CLUSTER", "NODES").Text()
		for line := range strings.Lines(text) {
			addr, _, _ := strings.Cut(strings.Fields(line)[1], "@")
			if !emuAddrs[addr] {
				t.Fatalf("RESP%s: CLUSTER NODES names %s", proto, addr)
			}
		}
	}

	// A key the first node does not serve: MOVED, forwarded and emulated alike.
	slot := 16000
	owner := byBackend[cl.MasterOf(t, slot).Addr()]
	other := emus[0]
	if other == owner {
		other = emus[1]
	}
	key := clusterserver.KeyIn(slot, "k")
	want := "-MOVED " + strconv.Itoa(slot) + " " + owner.Addr() + "\r\n"
	c := dialRaw(t, other.Addr())
	if got := c.do("GET", key); got != want {
		t.Fatalf("GET on the wrong node = %q, want %q", got, want)
	}
	if got := c.do("SET", key, "v", "IFEQ", "x"); got != want {
		t.Fatalf("emulated SET IFEQ on the wrong node = %q, want %q", got, want)
	}
	if got := c.do("DELEX", key, "IFEQ", "x"); got != want {
		t.Fatalf("emulated DELEX on the wrong node = %q, want %q", got, want)
	}

	// Mid-migration: the source answers ASK with the emulator's address, and the
	// target runs the emulated command after ASKING.
	src, dst := cl.MasterOf(t, slot), nodes[0]
	if dst.ID == src.ID {
		dst = nodes[1]
	}
	src.Do(t, "SET", key, "tok")
	mig := cl.BeginMigration(t, slot, dst)
	mig.MoveKeys(t, key)
	s := dialRaw(t, byBackend[src.Addr()].Addr())
	wantAsk := "-ASK " + strconv.Itoa(slot) + " " + byBackend[dst.Addr()].Addr() + "\r\n"
	if got := s.do("SET", key, "tok2", "IFEQ", "tok"); got != wantAsk {
		t.Fatalf("emulated SET IFEQ of a migrated key on the source = %q, want %q", got, wantAsk)
	}
	d := dialRaw(t, byBackend[dst.Addr()].Addr())
	if got := d.do("ASKING"); got != "+OK\r\n" {
		t.Fatalf("ASKING = %q", got)
	}
	if got := d.do("SET", key, "tok2", "IFEQ", "tok"); got != "+OK\r\n" {
		t.Fatalf("emulated SET IFEQ after ASKING = %q", got)
	}
	// ASKING applies to one command only.
	if got := d.do("DELEX", key, "IFEQ", "tok2"); !strings.HasPrefix(got, "-MOVED ") {
		t.Fatalf("emulated DELEX without ASKING on the importing node = %q, want MOVED", got)
	}
	mig.MoveAll(t)
	mig.Finish(t)
	if v := d.value("DELEX", key, "IFEQ", "tok2"); v.Kind() != resp.KindInteger {
		t.Fatalf("DELEX on the new owner = %v", v)
	}
}
