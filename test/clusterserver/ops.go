package clusterserver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Migration is a slot migration in progress, begun by BeginMigration.
type Migration struct {
	c        *Cluster
	slot     int
	from, to *Node
	slotArg  string
	finished bool
}

// MigrateSlot moves slot live from its current master to to, keys included, and
// returns once every node agrees that to serves it. Traffic may run meanwhile:
// clients see ASK while keys move and MOVED afterwards.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Node) {
	t.Helper()
	m := c.BeginMigration(t, slot, to)
	if m == nil {
		return
	}
	m.MoveAll(t)
	m.Finish(t)
}

// BeginMigration marks slot IMPORTING on to and MIGRATING on its current master. From
// then on the source answers ASK for keys of the slot it no longer has, and to accepts
// them after ASKING. It fails the test if to already serves the slot.
func (c *Cluster) BeginMigration(t testing.TB, slot int, to *Node) *Migration {
	t.Helper()
	from := c.MasterOf(t, slot)
	if from == nil {
		return nil
	}
	if from.ID == to.ID {
		t.Fatalf("clusterserver: %s already serves slot %d", to.Addr(), slot)
		return nil
	}
	m := &Migration{c: c, slot: slot, from: from, to: to, slotArg: strconv.Itoa(slot)}
	to.Do(t, "CLUSTER", "SETSLOT", m.slotArg, "IMPORTING", from.ID)
	from.Do(t, "CLUSTER", "SETSLOT", m.slotArg, "MIGRATING", to.ID)
	return m
}

// Source returns the node the slot is migrating from.
func (m *Migration) Source() *Node { return m.from }

// MoveKeys migrates the given keys (which must hash to the slot) from the source to the
// target with MIGRATE ... KEYS; keys the source no longer has are skipped by MIGRATE.
func (m *Migration) MoveKeys(t testing.TB, keys ...string) {
	t.Helper()
	if len(keys) == 0 {
		return
	}
	args := []string{"MIGRATE", "127.0.0.1", strconv.Itoa(m.to.Port()), "", "0", migrateTimeo, "KEYS"}
	args = append(args, keys...)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if m.c.cfg.Server.RequirePass != "" {
		args = append(args[:5], append([]string{migrateTimeo, "AUTH", m.c.cfg.Server.RequirePass, "KEYS"}, keys...)...)
	}
	out, err := m.from.DoErr(ctx, args...)
	if err != nil {
		t.Fatalf("clusterserver: MIGRATE of %d keys of slot %d from %s to %s: %v", len(keys), m.slot, m.from.Addr(), m.to.Addr(), err)
		return
	}
	if out != "OK" && out != "NOKEY" {
		t.Fatalf("clusterserver: MIGRATE replied %q", out)
	}
}

// MoveAll migrates every key of the slot, in batches, until the source has none left.
// Keys written to the source meanwhile are moved too.
func (m *Migration) MoveAll(t testing.TB) {
	t.Helper()
	for {
		out := m.from.Do(t, "CLUSTER", "GETKEYSINSLOT", m.slotArg, strconv.Itoa(migrateBatch))
		if out == "" {
			return
		}
		m.MoveKeys(t, strings.Split(out, "\n")...)
	}
}

// Finish assigns the slot to the target (SETSLOT NODE on the target, the source and
// then every other master, as redis-cli does) and waits until every node agrees.
// Keys still on the source must have been moved first (MoveAll).
func (m *Migration) Finish(t testing.TB) {
	t.Helper()
	if m.finished {
		return
	}
	m.finished = true
	m.to.Do(t, "CLUSTER", "SETSLOT", m.slotArg, "NODE", m.to.ID)
	m.from.Do(t, "CLUSTER", "SETSLOT", m.slotArg, "NODE", m.to.ID)
	for _, n := range m.c.Masters(t) {
		if n.ID == m.to.ID || n.ID == m.from.ID {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		_, err := n.DoErr(ctx, "CLUSTER", "SETSLOT", m.slotArg, "NODE", m.to.ID)
		cancel()
		if err != nil {
			t.Fatalf("clusterserver: SETSLOT %d NODE on %s: %v", m.slot, n.Addr(), err)
		}
	}
	m.c.WaitStable(t)
}

// Failover promotes replica to master of its master's slots with CLUSTER FAILOVER (the
// coordinated kind: the master stops writes until the replica has caught up) and
// waits until every node agrees. The old master becomes its replica.
func (c *Cluster) Failover(t testing.TB, replica *Node) {
	t.Helper()
	replica.Do(t, "CLUSTER", "FAILOVER")
	c.waitRole(t, replica, "master")
	c.WaitStable(t)
}

// KillMaster kills master with SIGKILL and waits until one of its replicas has been
// elected in its place and every live node agrees; it returns the new master. Writes
// the replica had not received are lost, as in any crash.
func (c *Cluster) KillMaster(t testing.TB, master *Node) *Node {
	t.Helper()
	replicas := c.ReplicasOf(t, master)
	if len(replicas) == 0 {
		t.Fatalf("clusterserver: %s has no replica to take over", master.Addr())
		return nil
	}
	master.Kill(t)
	var promoted *Node
	c.waitFor(t, "a replica of "+master.Addr()+" to be elected", func(ctx context.Context) error {
		for _, r := range replicas {
			info, err := r.DoErr(ctx, "INFO", "replication")
			if err != nil {
				return err
			}
			if strings.Contains(info, "role:master") {
				promoted = r
				return nil
			}
		}
		return fmt.Errorf("no replica of %s is master yet", master.Addr())
	})
	c.WaitStable(t)
	return promoted
}

// Restart restarts a killed node on its port and directory; it rejoins the cluster
// with its saved configuration (a master that was failed over comes back as a replica
// of its successor). Restart returns once every node agrees again, the restarted one
// included, and it reports the role it expects.
func (c *Cluster) Restart(t testing.TB, n *Node) {
	t.Helper()
	n.Server.Restart(t)
	c.waitFor(t, n.Addr()+" to rejoin", func(ctx context.Context) error {
		for _, other := range c.members() {
			if other == n {
				continue
			}
			view, err := other.view(ctx)
			if err != nil {
				if isDown(err) {
					continue
				}
				return err
			}
			for _, e := range view {
				if e.id == n.ID && (e.has("fail") || e.has("fail?")) {
					return fmt.Errorf("%s still sees %s as failed", other.Addr(), n.Addr())
				}
			}
		}
		return nil
	})
	c.WaitStable(t)
}

// waitRole waits until INFO replication on n reports role.
func (c *Cluster) waitRole(t testing.TB, n *Node, role string) {
	t.Helper()
	c.waitFor(t, n.Addr()+" to become "+role, func(ctx context.Context) error {
		info, err := n.DoErr(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:"+role) {
			return fmt.Errorf("%s is not %s yet", n.Addr(), role)
		}
		return nil
	})
}

// RemoveNode takes a replica out of the cluster: CLUSTER FORGET on every other node
// (which bans it for a minute, long enough for any test), then CLUSTER RESET on the node
// itself, and waits until the others agree. The process keeps running, outside the
// cluster. Masters serving slots cannot be removed this way.
func (c *Cluster) RemoveNode(t testing.TB, n *Node) {
	t.Helper()
	for _, other := range c.members() {
		if other == n {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
		_, err := other.DoErr(ctx, "CLUSTER", "FORGET", n.ID)
		cancel()
		if err != nil && !isDown(err) {
			t.Fatalf("clusterserver: CLUSTER FORGET %s on %s: %v", n.Addr(), other.Addr(), err)
		}
	}
	n.Do(t, "CLUSTER", "RESET", "HARD")
	c.mu.Lock()
	c.nodes = slices.DeleteFunc(c.nodes, func(x *Node) bool { return x == n })
	c.mu.Unlock()
	c.WaitStable(t)
}
