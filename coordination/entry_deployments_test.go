package coordination

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// exerciseEntries runs the read/write and semaphore cycles every deployment must
// support, checking on srv, the server that serves tag's slot, what was stored.
func exerciseEntries(t *testing.T, co *Coordinator, srv *testserver.Server, tag string) {
	t.Helper()
	ctx := context.Background()
	rwKey, semKey := "{"+tag+"}:rw", "{"+tag+"}:sem"
	r, ok, err := co.TryAcquireReadLock(ctx, rwKey, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := co.TryAcquireWriteLock(ctx, rwKey, time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	if srv.Do(t, "HLEN", rwKey) != "1" {
		t.Fatal("the read lease is not on the expected node")
	}
	if ok, err := r.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if out, err := r.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	sem := co.Semaphore(semKey, 1)
	p, ok, err := sem.TryAcquire(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := sem.TryAcquire(ctx, time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, _, err := co.Semaphore(semKey, 2).TryAcquire(ctx, time.Minute); !errors.Is(err, ErrCapacityMismatch) {
		t.Fatal(err)
	}
	if srv.Do(t, "HGET", semKey, "capacity") != "1" {
		t.Fatal("the semaphore is not on the expected node")
	}
	if out, err := p.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
}

// refusedInGroup checks that a client of one deployment cannot vote in a Redlock group.
func refusedInGroup(t *testing.T, c *respire.Client) {
	t.Helper()
	others := []*respire.Client{plainClient(t, testserver.Start(t, testserver.Config{})), plainClient(t, testserver.Start(t, testserver.Config{}))}
	if _, err := NewRedlockGroup(append(others, c), RedlockOptions{}); !errors.Is(err, ErrRedlockGroup) {
		t.Fatal(err)
	}
}

func TestEntriesOnCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true})
	co := New(c)
	for _, slot := range []int{100, 12000} {
		exerciseEntries(t, co, cl.MasterOf(t, slot).Server, tagIn(slot))
	}
	refusedInGroup(t, c)
}

func TestEntriesOnSentinel(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1})
	c := testclient.New(t, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName()})
	exerciseEntries(t, New(c), d.Master(t), "sentinel")
	refusedInGroup(t, c)
}
