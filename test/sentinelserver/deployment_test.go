package sentinelserver

import (
	"context"
	"testing"
	"time"
)

// TestDeployment starts a deployment, stops and restarts a Sentinel, and fails over.
func TestDeployment(t *testing.T) {
	start := time.Now()
	d := Start(t, Config{})
	t.Logf("deployment agreed after %v", time.Since(start))
	if len(d.Nodes) != 3 || len(d.Sentinels) != 3 {
		t.Fatalf("%d nodes, %d Sentinels", len(d.Nodes), len(d.Sentinels))
	}
	if got := d.MasterAddr(t); got != d.Nodes[0].Addr() {
		t.Fatalf("master %s, want %s", got, d.Nodes[0].Addr())
	}

	d.StopSentinel(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := d.SentinelDo(ctx, 0, "PING"); err == nil {
		t.Fatal("a stopped Sentinel answers")
	}
	if got := d.MasterAddr(t); got != d.Nodes[0].Addr() {
		t.Fatalf("with Sentinel 0 stopped: master %s", got)
	}
	d.StartSentinel(t, 0)
	d.WaitAgreed(t)

	start = time.Now()
	m := d.Failover(t)
	t.Logf("SENTINEL FAILOVER: new master %s after %v", m.Addr(), time.Since(start))
	if m == d.Nodes[0] {
		t.Fatal("Failover returned the old master")
	}
	if got := d.MasterAddr(t); got != m.Addr() {
		t.Fatalf("master %s after failover, want %s", got, m.Addr())
	}

	start = time.Now()
	killed := d.KillMaster(t)
	m2 := d.WaitNewMaster(t, killed.Addr())
	t.Logf("kill -9: new master %s after %v", m2.Addr(), time.Since(start))
	if m2 == killed {
		t.Fatal("WaitNewMaster returned the killed master")
	}
}

// TestPasswords: data nodes and Sentinels with passwords of their own.
func TestPasswords(t *testing.T) {
	d := Start(t, Config{Replicas: 1, Sentinels: 1, Password: "node-pw", SentinelPassword: "sentinel-pw"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.Sentinels[0].DoErr(ctx, "PING"); err == nil {
		t.Fatal("a Sentinel with requirepass answers without AUTH")
	}
	if got := d.MasterAddr(t); got != d.Nodes[0].Addr() {
		t.Fatalf("master %s", got)
	}
}
