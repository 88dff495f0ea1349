package route

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
)

// recorder is an Observer that keeps the routers' events.
type recorder struct {
	observe.Base
	mu     sync.Mutex
	events []any
}

func (r *recorder) add(e any) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) Redirect(e observe.Redirect) { r.add(e) }
func (r *recorder) Topology(e observe.Topology) { r.add(e) }
func (r *recorder) Failover(e observe.Failover) { r.add(e) }
func (r *recorder) PoolWait(e observe.PoolWait) { r.add(e) }

// take returns the events of type E that r recorded and forgets them.
func take[E any](r *recorder) []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []E
	r.events = slices.DeleteFunc(r.events, func(e any) bool {
		v, ok := e.(E)
		if ok {
			out = append(out, v)
		}
		return ok
	})
	return out
}

// keyOn returns a key that the node at addr serves, by the slot table r has read.
func keyOn(t *testing.T, r *Router, addr, prefix string) string {
	for i := range 100000 {
		k := fmt.Sprintf("%s%d", prefix, i)
		if r.Inspect().SlotOwner(cluster.Slot(k)) == addr {
			return k
		}
	}
	t.Fatalf("no key on %s", addr)
	return ""
}

// A slot migrated under a real cluster is reported as it is followed: ASK while the
// key is on the importing node, MOVED once the slot has its new owner, and the
// refreshes of the slot map, with whether a slot changed owner.
func TestClusterEventsOnMigration(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec := &recorder{}
	r, err := NewCluster(ctx, cl.Seeds(), Options{Conn: conn.Options{Observer: rec}, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tp := take[observe.Topology](rec)
	if len(tp) != 1 || tp[0].Err != nil || tp[0].Nodes != 3 || tp[0].Changed || tp[0].Addr == "" {
		t.Errorf("start-up refreshes: %+v; want one of 3 masters, unchanged, with the node asked", tp)
	}

	masters := cl.Masters(t)
	from, to := masters[0], masters[1]
	askKey, movedKey := keyOn(t, r, from.Addr(), "ask:"), keyOn(t, r, from.Addr(), "moved:")
	askSlot, movedSlot := cluster.Slot(askKey), cluster.Slot(movedKey)
	if askSlot == movedSlot {
		t.Fatal("both keys in one slot")
	}
	set := func(k string) {
		t.Helper()
		if _, _, err := r.Do(ctx, &Cmd{Args: []any{"SET", k, "v"}}, &Call{}); err != nil {
			t.Fatal(err)
		}
	}
	set(askKey)
	set(movedKey)
	take[any](rec) // what the writes caused

	m := cl.BeginMigration(t, askSlot, to)
	m.MoveKeys(t, askKey)
	if v, _, err := r.Do(ctx, get(askKey), &Call{}); err != nil || v.String() != `"v"` {
		t.Fatalf("GET during the migration = %v, %v", v, err)
	}
	rd := take[observe.Redirect](rec)
	want := observe.Redirect{Kind: observe.Ask, Slot: askSlot, From: from.Addr(), To: to.Addr()}
	if len(rd) != 1 || rd[0] != want {
		t.Errorf("redirects during the migration: %+v; want %+v", rd, want)
	}
	m.MoveAll(t)
	m.Finish(t)
	if err := r.Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	tp = take[observe.Topology](rec)
	if i := slices.IndexFunc(tp, func(e observe.Topology) bool { return e.Changed }); i < 0 || tp[i].Err != nil || tp[i].Nodes != 3 {
		t.Errorf("refreshes after the migration: %+v; want one that saw the slot change owner", tp)
	}

	cl.MigrateSlot(t, movedSlot, to)
	if v, _, err := r.Do(ctx, get(movedKey), &Call{}); err != nil || v.String() != `"v"` {
		t.Fatalf("GET after the slot moved = %v, %v", v, err)
	}
	rd = take[observe.Redirect](rec)
	want = observe.Redirect{Kind: observe.Moved, Slot: movedSlot, From: from.Addr(), To: to.Addr()}
	if len(rd) != 1 || rd[0] != want {
		t.Errorf("redirects after the slot moved: %+v; want %+v", rd, want)
	}
}

// The Sentinel router reports the master it starts with and each one it follows to.
func TestSentinelFailoverEvents(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec := &recorder{}
	first := d.MasterAddr(t)
	r, err := NewSentinel(ctx, SentinelOptions{Sentinels: d.SentinelAddrs(), Master: d.MasterName()},
		Options{Conn: conn.Options{Observer: rec}, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fo := take[observe.Failover](rec)
	if want := (observe.Failover{Master: d.MasterName(), To: first}); len(fo) != 1 || fo[0] != want {
		t.Fatalf("at start-up: %+v; want %+v", fo, want)
	}
	next := d.Failover(t).Addr()
	want := observe.Failover{Master: d.MasterName(), From: first, To: next}
	for {
		fo = take[observe.Failover](rec)
		if len(fo) > 0 {
			if len(fo) != 1 || fo[0] != want {
				t.Errorf("after the failover: %+v; want %+v", fo, want)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no failover event after %s took over", next)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TRYAGAIN and CLUSTERDOWN are reported as they are retried, on the slot's owner; a
// refresh that finds no node is reported with its error; a dedicated checkout that
// waits for a free connection is reported with its wait.
func TestRouterEventsScripted(t *testing.T) {
	slot := keySlot("", "k")
	var tries atomic.Int32
	var noTopology atomic.Bool
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			if noTopology.Load() {
				return "-ERR no topology today\r\n"
			}
			return r
		}
		switch tries.Add(1) {
		case 1:
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		case 2:
			return "-CLUSTERDOWN The cluster is down\r\n"
		}
		return "$1\r\nv\r\n"
	}
	rec := &recorder{}
	observed := func(o *Options) {
		o.Conn.Observer = rec
		o.PoolSize = 1
	}
	inBubbleWith(t, handle, observed, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		if _, _, err := r.Do(ctx, get("k"), &Call{}); err != nil {
			t.Fatal(err)
		}
		rd := take[observe.Redirect](rec)
		want := []observe.Redirect{
			{Kind: observe.TryAgain, Slot: slot, From: nodeA},
			{Kind: observe.ClusterDown, Slot: slot, From: nodeA},
		}
		if !slices.Equal(rd, want) {
			t.Errorf("redirects: %+v; want %+v", rd, want)
		}

		held, err := r.Dedicated(ctx, Slot(slot))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second)
			r.Release(held, true)
		}()
		cn, err := r.Dedicated(ctx, Slot(slot))
		if err != nil {
			t.Fatal(err)
		}
		r.Release(cn, true)
		if pw := take[observe.PoolWait](rec); len(pw) != 1 || pw[0] != (observe.PoolWait{Addr: nodeA, Wait: time.Second}) {
			t.Errorf("pool waits: %+v; want one of 1s on %s", pw, nodeA)
		}

		noTopology.Store(true)
		if err := r.Resolve(ctx); err == nil {
			t.Fatal("Resolve with no topology to read succeeded")
		}
		tp := take[observe.Topology](rec)
		if len(tp) == 0 || tp[len(tp)-1].Err == nil || tp[len(tp)-1].Addr != nodeA {
			t.Errorf("refreshes: %+v; want the last with its error and the node asked, %s", tp, nodeA)
		}
	})
}
