package respire

import (
	"context"
	"testing"

	"github.com/respire/respire/test/sentinelserver"
)

// The client and its router agree on whether a command is read-only, from the one
// entry the client looked up: MYGET, GET renamed on the servers, is a command the
// default table does not know, which the client learns from COMMAND INFO (a key prefix
// needs its keys) as a read; with replica reads on it is then read from the replica,
// where the router once took it for a write and sent it to the master.
func TestLearnedReadOnlyCommandReadsFromReplica(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1,
		NodeArgs: []string{"--rename-command", "GET", "MYGET"}})
	ctx := context.Background()
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(),
		ReplicaReads: true, KeyPrefix: "app:", Observer: rec})
	master := d.MasterAddr(t)
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	// The Monitor names the replica in its own time: poll until a read goes there.
	waitFor(t, "MYGET read from the replica", func() bool {
		if _, err := c.Do(ctx, "MYGET", "k"); err != nil {
			t.Fatalf("MYGET: %v", err)
		}
		return rec.lastEnd(t).Addr != master
	})
	// Learned now: the start event expects the replica the router sends it to.
	if _, err := c.Do(ctx, "MYGET", "k"); err != nil {
		t.Fatalf("MYGET: %v", err)
	}
	end := rec.lastEnd(t)
	rec.mu.Lock()
	start := rec.starts[len(rec.starts)-1]
	rec.mu.Unlock()
	if end.Addr == master || start.Addr != end.Addr {
		t.Errorf("MYGET was expected on %q and answered by %q (the master is %s)", start.Addr, end.Addr, master)
	}
}
