package lock

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
)

// setIfEqCap returns what the lock connection that serves key (the one renewals use)
// has learned of SET IFEQ.
func setIfEqCap(t *testing.T, c *respire.Client, key string) conn.Support {
	t.Helper()
	cn, err := link.Of(c).Conn(context.Background(), route.LockLane, key)
	if err != nil {
		t.Fatal(err)
	}
	return cn.Capabilities().Load(capSetIfEq)
}

func otherMaster(t *testing.T, cl *clusterserver.Cluster, not *clusterserver.Node) *clusterserver.Node {
	t.Helper()
	for _, m := range cl.Masters(t) {
		if m.ID != not.ID {
			return m
		}
	}
	t.Fatal("one master only")
	return nil
}

// On a Cluster each node's connection learns its server's commands on its own; a lock
// whose slot moves is renewed and released through the redirection (MOVED after the
// move, ASK during it), and the new node's connection discovers its own capabilities.
func TestLocksOnCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := context.Background()
	slots := []int{100, 6000, 12000}
	keys := make([]string, len(slots))
	nodes := make([]*clusterserver.Node, len(slots))
	for i, s := range slots {
		keys[i] = clusterserver.KeyIn(s, "lock:")
		nodes[i] = cl.MasterOf(t, s)
	}
	if nodes[0].ID == nodes[1].ID || nodes[1].ID == nodes[2].ID || nodes[0].ID == nodes[2].ID {
		t.Fatal("the sample slots must be on three masters")
	}

	t.Run("DiscoveryPerNode", func(t *testing.T) {
		c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true})
		locks := New(c)
		failedBefore := make([]int, len(nodes))
		for i, n := range nodes {
			failedBefore[i] = n.Server.CommandStat(t, "set", "failed_calls")
		}
		for i, k := range keys[:2] {
			for range 3 {
				cycle(t, locks, k)
			}
			if got := setIfEqCap(t, c, k); got != conn.Unsupported {
				t.Fatalf("node %d: SET IFEQ is %v on its connection after renewals, want unsupported", i, got)
			}
		}
		// The third node's connection has not learned anything from the others.
		if got := setIfEqCap(t, c, keys[2]); got != conn.Unknown {
			t.Fatalf("an unused node's connection knows SET IFEQ as %v", got)
		}
		cycle(t, locks, keys[2])
		for i, n := range nodes {
			// Each node was tried once with SET IFEQ (the syntax error is a failed
			// call), however many renewals it served: one discovery per connection.
			if got := n.Server.CommandStat(t, "set", "failed_calls") - failedBefore[i]; got != 1 {
				t.Errorf("node %d: %d SET IFEQ attempts, want 1", i, got)
			}
		}
	})

	t.Run("SlotMovesWithMOVED", func(t *testing.T) {
		c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true})
		locks := New(c)
		key := clusterserver.KeyIn(slots[0], "moving:")
		from := cl.MasterOf(t, slots[0])
		to := otherMaster(t, cl, from)
		mu, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
			t.Fatalf("renewal before the move: %v %v", ok, err)
		}
		failed, evals := to.Server.CommandStat(t, "set", "failed_calls"), to.Server.CommandStat(t, "evalsha", "calls")+to.Server.CommandStat(t, "eval", "calls")
		cl.MigrateSlot(t, slots[0], to)
		// The target's connection is new to this client: it knows nothing yet. (Reach
		// it through a key it served before the move: the client has not seen MOVED.)
		i := 1 + slices.IndexFunc(slots[1:], func(s int) bool { return cl.MasterOf(t, s).ID == to.ID })
		toConn, err := link.Of(c).Conn(ctx, route.LockLane, keys[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := toConn.Capabilities().Load(capSetIfEq); got != conn.Unknown {
			t.Fatalf("the target's connection knows SET IFEQ as %v before the move", got)
		}
		// The first renewal goes to the old owner, which the client knows answers
		// SET IFEQ with a syntax error: the script is sent, redirected by MOVED, and
		// runs on the new owner.
		if ok, err := mu.ResetExpiry(ctx, 3*time.Minute); !ok || err != nil {
			t.Fatalf("renewal after the move: %v %v", ok, err)
		}
		if n, _ := strconv.ParseInt(to.Do(t, "PTTL", key), 10, 64); n < 2*time.Minute.Milliseconds() {
			t.Fatalf("PTTL on the new owner %d: the renewal did not reach it", n)
		}
		if got := to.Server.CommandStat(t, "evalsha", "calls") + to.Server.CommandStat(t, "eval", "calls") - evals; got < 1 {
			t.Fatal("the renewal's script did not run on the target")
		}
		// The next one goes straight to the new owner, whose connection discovers
		// for itself what its server has.
		if ok, err := mu.ResetExpiry(ctx, 4*time.Minute); !ok || err != nil {
			t.Fatalf("second renewal after the move: %v %v", ok, err)
		}
		if got := toConn.Capabilities().Load(capSetIfEq); got != conn.Unsupported {
			t.Fatalf("the target's connection did not learn SET IFEQ from its own reply: %v", got)
		}
		if got := to.Server.CommandStat(t, "set", "failed_calls") - failed; got != 1 {
			t.Fatalf("the target saw %d SET IFEQ attempts, want 1", got)
		}
		if out, err := mu.Release(ctx); out != Released || err != nil {
			t.Fatalf("release after the move: %v %v", out, err)
		}
		if got := to.Do(t, "EXISTS", key); got != "0" {
			t.Fatal("the lock is still on the new owner")
		}
	})

	t.Run("SlotMovesWithASK", func(t *testing.T) {
		c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true})
		locks := New(c)
		slot := slots[1]
		key := clusterserver.KeyIn(slot, "asking:")
		from := cl.MasterOf(t, slot)
		to := otherMaster(t, cl, from)
		mu, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		asking := to.Server.CommandStat(t, "asking", "calls")
		mig := cl.BeginMigration(t, slot, to)
		mig.MoveKeys(t, key)
		if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
			t.Fatalf("renewal of a migrated key: %v %v", ok, err)
		}
		if ok, err := mu.VerifyStillHeld(ctx); !ok || err != nil {
			t.Fatalf("VerifyStillHeld during the migration: %v %v", ok, err)
		}
		if out, err := mu.Release(ctx); out != Released || err != nil {
			t.Fatalf("release of a migrated key: %v %v", out, err)
		}
		if to.Server.CommandStat(t, "asking", "calls") == asking {
			t.Fatal("nothing was sent with ASKING")
		}
		if got := to.Do(t, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); got != "0" {
			t.Fatalf("the target still holds %s keys of the slot", got)
		}
		mig.MoveAll(t)
		mig.Finish(t)
	})
}

// A mixed-version cluster: the emulator in front of each node answers as Redis 8.4 on
// one, Redis 7 on another, Valkey 9.0 on the third, and rewrites node addresses so the
// client stays on the emulators. Each node's connection uses its server's commands:
// native on some, Lua on others, proven by the emulators' counters. A lock moved from
// the Redis 8.4 node to the Redis 7 node is renewed and released through the
// redirection, and the Redis 7 node's connection discovers Lua on its own.
func TestLocksOnMixedVersionCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	nodes := cl.Nodes()
	profiles := []emulator.Profile{emulator.Redis84, emulator.Redis7, emulator.Valkey90}
	emus := emulator.StartCluster(t, cl.Seeds(), profiles)
	seeds := []string{emus[0].Addr(), emus[1].Addr()}
	ctx := context.Background()

	// Every node's first slot, and a key there.
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		for s := 0; s < cluster.SlotCount; s += 97 {
			if cl.MasterOf(t, s).ID == n.ID {
				keys[i] = clusterserver.KeyIn(s, "mixed:")
				break
			}
		}
	}
	want := map[emulator.Profile][]string{
		emulator.Redis84:  {"SET NX", "SET IFEQ", "DELEX"},
		emulator.Redis7:   {"SET NX", "SET IFEQ", "EVALSHA", "EVAL", "DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
		emulator.Valkey90: {"SET NX", "SET IFEQ", "DELEX", "DELIFEQ"},
	}
	c := testclient.New(t, respire.Options{Addrs: seeds, Cluster: true})
	for _, n := range nodes {
		n.Do(t, "SCRIPT", "FLUSH")
	}
	for _, e := range emus {
		e.Reset()
	}
	locks := New(c)
	for _, k := range keys {
		cycle(t, locks, k)
	}
	for i, e := range emus {
		if got := lockCommands(e); !slices.Equal(got, want[profiles[i]]) {
			t.Errorf("%s node: %v, want %v", profiles[i], got, want[profiles[i]])
		}
		if _, version := mustConn(t, c, keys[i]).Server(); version != map[emulator.Profile]string{emulator.Redis84: "8.4.0", emulator.Redis7: "7.0.15", emulator.Valkey90: "9.0.0"}[profiles[i]] {
			t.Errorf("%s node: the client's connection reached a server of version %q", profiles[i], version)
		}
	}

	// Move a lock from the Redis 8.4 node to the Redis 7 node, with a fresh client
	// whose Redis 7 connection has learned nothing.
	c2 := testclient.New(t, respire.Options{Addrs: seeds, Cluster: true})
	locks2 := New(c2)
	slot := cluster.Slot(keys[0])
	key := clusterserver.KeyIn(slot, "moved:")
	mu, err := locks2.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("renewal on Redis 8.4: %v %v", ok, err)
	}
	cl.MigrateSlot(t, slot, nodes[1])
	for _, e := range emus {
		e.Reset()
	}
	if ok, err := mu.ResetExpiry(ctx, 3*time.Minute); !ok || err != nil {
		t.Fatalf("renewal after the move: %v %v", ok, err)
	}
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatalf("release after the move: %v %v", out, err)
	}
	if got := lockCommands(emus[0]); !slices.Equal(got, []string{"SET IFEQ"}) {
		t.Errorf("old owner (Redis 8.4) saw %v, want the renewal it redirected", got)
	}
	if got, want := lockCommands(emus[1]), []string{"SET IFEQ", "EVALSHA", "DELEX", "DELIFEQ", "EVALSHA"}; !slices.Equal(got, want) {
		t.Errorf("new owner (Redis 7) saw %v, want %v: its connection discovers Lua itself", got, want)
	}
	if n := emus[2].Count("SET"); n != 0 {
		t.Errorf("the Valkey node saw %d SETs", n)
	}
	if got := nodes[1].Do(t, "EXISTS", key); got != "0" {
		t.Fatal("the lock is still on the new owner")
	}
}

func mustConn(t *testing.T, c *respire.Client, key string) *conn.Conn {
	t.Helper()
	cn, err := link.Of(c).Conn(context.Background(), route.SharedLane, key)
	if err != nil {
		t.Fatal(err)
	}
	return cn
}
