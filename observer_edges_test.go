package respire

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// Each round trip of Scan is a command the observer sees, as HScan's are: named SCAN,
// with the server's address.
func TestObserverScan(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for i := range 30 {
		srv.Do(t, "SET", fmt.Sprintf("scan:%d", i), "v")
	}
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	n := 0
	for _, err := range c.Scan(context.Background(), ScanOptions{Count: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("Scan yielded %d keys, want 30", n)
	}
	rec.lastEnd(t) // every start ended
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ends) < 2 {
		t.Errorf("%d CommandEnd events for a Scan of 30 keys by 5, want one a round trip", len(rec.ends))
	}
	for _, e := range rec.ends {
		if e.Name != "SCAN" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
			t.Errorf("CommandEnd %+v, want SCAN on %s, ok", e, srv.Addr())
		}
	}
}

// On a Cluster, a batch whose keys are all on one node (a hash tag) names that node in
// BatchEnd.Addr, DoMulti's and a Pipeline's alike; one split across nodes names none.
func TestObserverClusterBatchAddr(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := clusterTestContext(t)
	rec := &recorder{}
	c := clusterClient(t, cl, Options{Observer: rec})
	const slot = 4242
	one := [][]any{{"SET", keyIn(slot, "a"), "1"}, {"GET", keyIn(slot, "b")}}
	spread := [][]any{{"GET", keyIn(0, "obs")}, {"GET", keyIn(cluster.SlotCount-1, "obs")}}
	owner := cl.MasterOf(t, slot).Addr()
	pipeline := func(cmds [][]any) ([]Result, error) {
		p := c.Pipeline()
		for _, args := range cmds {
			p.Do(args...)
		}
		return p.Exec(ctx)
	}
	for _, tc := range []struct {
		name string
		run  func(cmds [][]any) ([]Result, error)
	}{
		{"multi", func(cmds [][]any) ([]Result, error) { return c.DoMulti(ctx, cmds...) }},
		{"pipeline", pipeline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.run(one); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != owner || e.Outcome != observe.OK {
				t.Errorf("batch on %s alone: BatchEnd %+v", owner, e)
			}
			if _, err := tc.run(spread); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != "" || e.Outcome != observe.OK {
				t.Errorf("batch split across nodes: BatchEnd %+v", e)
			}
		})
	}
}

// A tracked connection closed on purpose, as the router closes the old master's at a
// Sentinel failover, is not reported lost; a tracked connection that breaks is.
func TestObserverTrackingClosedIsNotLost(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := cachedClientT(t, srv, Options{Observer: rec})
	tracked := func() *conn.Conn {
		cachedText(t, c, time.Hour, "GET", "obs:r")
		tr := c.tracking
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.conns[srv.Addr()]
	}
	old := tracked()
	if old == nil {
		t.Fatal("no tracked connection")
	}
	old.Close()
	eventually(t, "a new tracked connection", func() bool {
		cn := tracked()
		return cn != nil && cn != old
	})
	if _, ok := rec.cacheEvent(observe.CacheTrackingLost); ok {
		t.Fatal("a tracked connection closed on purpose was reported lost")
	}
	if killTracked(t, srv) == 0 {
		t.Fatal("no tracking connection to kill")
	}
	eventually(t, "the tracking-lost event of the broken connection", func() bool {
		_, ok := rec.cacheEvent(observe.CacheTrackingLost)
		return ok
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, e := range rec.caches {
		if e.Kind == observe.CacheTrackingLost {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d CacheTrackingLost events for one connection closed on purpose and one broken, want 1", n)
	}
}

// panicCtx is a context whose Done and Err panic: a call sent with it panics on the
// caller's goroutine after its start event.
type panicCtx struct{ context.Context }

func (panicCtx) Done() <-chan struct{} { panic("panicCtx.Done") }
func (panicCtx) Err() error            { panic("panicCtx.Err") }

// panicking is a recorder whose start events hand back a panicCtx.
type panicking struct{ *recorder }

func (p panicking) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	return panicCtx{p.recorder.CommandStart(ctx, e)}
}

func (p panicking) BatchStart(ctx context.Context, e observe.BatchStart) context.Context {
	return panicCtx{p.recorder.BatchStart(ctx, e)}
}

// A call that panics on the caller's goroutine after its start event still ends it,
// with an unknown outcome, on every observed path.
func TestObserverEndsAfterPanic(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	calls := []struct {
		name  string
		batch bool
		run   func(c *Client)
	}{
		{"Do", false, func(c *Client) { c.Do(ctx, "GET", "p:k") }},
		{"DoCached", false, func(c *Client) { c.DoCached(ctx, time.Minute, "GET", "p:k") }},
		{"DoOn", false, func(c *Client) {
			cn, release, err := c.Dedicated(ctx, "p:k")
			if err != nil {
				t.Fatal(err)
			}
			defer release(false)
			c.link.Do(ctx, cn.cn, route.SharedLane, conn.CallOptions{}, "GET", "p:k")
		}},
		{"Tx.Do", false, func(c *Client) {
			c.Watch(ctx, func(tx *Tx) error { _, err := tx.Do(ctx, "GET", "p:k"); return err }, "p:k")
		}},
		{"DoMulti", true, func(c *Client) { c.DoMulti(ctx, []any{"GET", "p:k"}) }},
		{"Pipeline", true, func(c *Client) { c.Pipeline().Do("GET", "p:k").Exec(ctx) }},
		{"Tx.Exec", true, func(c *Client) {
			c.Watch(ctx, func(tx *Tx) error { _, err := tx.Exec(ctx, []any{"GET", "p:k"}); return err }, "p:k")
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c := cachedClientT(t, srv, Options{Observer: panicking{rec}})
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the call did not panic")
					}
				}()
				tc.run(c)
			}()
			var outcome observe.Outcome
			var err error
			if tc.batch {
				e := rec.lastBatch(t)
				outcome, err = e.Outcome, e.Err
			} else {
				e := rec.lastEnd(t)
				outcome, err = e.Outcome, e.Err
			}
			if outcome != observe.Unknown || err != errPanicked {
				t.Errorf("the end event says %v, %v; want unknown, errPanicked", outcome, err)
			}
		})
	}
}

// In a transaction, a command or an Exec refused before it was sent is reported as
// Do reports one, not sent and with no address, whether it was refused by its
// arguments, its slot or a second Exec.
func TestObserverTxNotSent(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	check := func(t *testing.T, e observe.CommandEnd, err error) {
		t.Helper()
		if err == nil || e.Outcome != observe.NotSent || e.Addr != "" || e.Err != err {
			t.Errorf("end event %+v for %v, want not sent, no address", e, err)
		}
	}
	t.Run("Do", func(t *testing.T) {
		for _, args := range [][]any{{"SELECT", "1"}, {"SET", "tx:k", struct{}{}}} {
			var err error
			c.Watch(ctx, func(tx *Tx) error { _, err = tx.Do(ctx, args...); return nil }, "tx:k")
			check(t, rec.lastEnd(t), err)
		}
	})
	t.Run("Exec", func(t *testing.T) {
		var errs []error
		c.Watch(ctx, func(tx *Tx) error {
			_, err := tx.Exec(ctx, []any{"SET", "tx:k", struct{}{}})
			errs = append(errs, err)
			_, err = tx.Exec(ctx, []any{"SET", "tx:k", "v"})
			errs = append(errs, err)
			return nil
		}, "tx:k")
		rec.mu.Lock()
		got := append([]observe.BatchEnd(nil), rec.batches...)
		rec.mu.Unlock()
		if len(got) != len(errs) {
			t.Fatalf("%d BatchEnd events for %d refused Execs", len(got), len(errs))
		}
		for i, e := range got {
			check(t, observe.CommandEnd{Outcome: e.Outcome, Addr: e.Addr, Err: e.Err}, errs[i])
		}
	})
}

// A command the table lacks is named by its first argument when that is a string, and
// UNKNOWN when it is not, which naming it would allocate for.
func TestObserverUnknownCommandName(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	for _, tc := range []struct {
		name any
		want string
	}{
		{"NoSuchCommand", "NoSuchCommand"},
		{[]byte("NoSuchCommand"), "UNKNOWN"},
	} {
		c.Do(context.Background(), tc.name, "x")
		if e := rec.lastEnd(t); e.Name != tc.want || e.Outcome != observe.ServerError {
			t.Errorf("%T name: CommandEnd %s, %v; want %s, server_error", tc.name, e.Name, e.Outcome, tc.want)
		}
	}
}
