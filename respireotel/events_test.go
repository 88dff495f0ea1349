package respireotel

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
)

// Each event without a server of its own to provoke it here (a Cluster's redirects and
// refreshes, a lost connection, a flush) lands in its instrument under its label.
func TestEventCounters(t *testing.T) {
	h := newHarness(t)
	o := h.obs
	boom := errors.New("boom")
	o.Redirect(observe.Redirect{Kind: observe.Moved, Slot: 1, From: "a:1", To: "b:2"})
	o.Redirect(observe.Redirect{Kind: observe.Ask, Slot: 1, From: "a:1", To: "b:2"})
	o.Redirect(observe.Redirect{Kind: observe.Moved, Slot: 2, From: "a:1", To: "b:2"})
	o.Topology(observe.Topology{Addr: "a:1", Changed: true})
	o.Topology(observe.Topology{Addr: "a:1"})
	o.Topology(observe.Topology{Addr: "a:1", Err: boom})
	o.Conn(observe.Conn{Kind: observe.ConnLost, Addr: "127.0.0.1:7000", Err: boom})
	o.Conn(observe.Conn{Kind: observe.ConnDialFailed, Addr: "127.0.0.1:7000", Duration: time.Millisecond, Err: boom})
	o.Cache(observe.Cache{Kind: observe.CacheInvalidate, Keys: 3, Addr: "a:1"})
	o.Cache(observe.Cache{Kind: observe.CacheFlush, Addr: "a:1"})
	o.Cache(observe.Cache{Kind: observe.CacheTrackingLost, Addr: "a:1"})
	o.Cutoff(observe.Cutoff{Addr: "a:1", ClientID: 7, Err: boom})

	for _, tc := range []struct {
		name string
		want []attribute.KeyValue
		n    int64
	}{
		{"respire.redirects", []attribute.KeyValue{redirectKindKey.String("moved")}, 2},
		{"respire.redirects", []attribute.KeyValue{redirectKindKey.String("ask")}, 1},
		{"respire.cluster.refreshes", []attribute.KeyValue{resultKey.String(resultChanged)}, 1},
		{"respire.cluster.refreshes", []attribute.KeyValue{resultKey.String(resultUnchanged)}, 1},
		{"respire.cluster.refreshes", []attribute.KeyValue{resultKey.String(resultFailed)}, 1},
		{"respire.connection.events", []attribute.KeyValue{connEventKey.String("lost"), attribute.Int("server.port", 7000)}, 1},
		{"respire.connection.events", []attribute.KeyValue{connEventKey.String("dial_failed")}, 1},
		{"respire.cache.invalidations", nil, 3},
		{"respire.cache.flushes", []attribute.KeyValue{flushReasonKey.String("flush")}, 1},
		{"respire.cache.flushes", []attribute.KeyValue{flushReasonKey.String("tracking_lost")}, 1},
		{"respire.lock.cutoffs", []attribute.KeyValue{resultKey.String(resultFailed)}, 1},
	} {
		if got := h.sum(t, tc.name, tc.want...); got != tc.n {
			t.Errorf("%s %v = %d, want %d", tc.name, tc.want, got, tc.n)
		}
	}
	if n := h.count(t, "db.client.connection.create_time"); n != 0 {
		t.Errorf("a failed dial recorded a create time")
	}
}

// db.client.connection.timeouts counts the checkouts that gave up on a timeout, as
// the route layer reports them (wrapped in a conn.CallError): not those cancelled,
// nor those the pool's or client's closing ended, nor those that got a connection.
func TestPoolWaitCountsOnlyTimeouts(t *testing.T) {
	h := newHarness(t)
	notSent := func(err error) error { return &conn.CallError{Err: err} }
	for _, tc := range []struct {
		addr string
		err  error
		n    int64
	}{
		{"deadline:1", notSent(&pool.ExhaustedError{Size: 1, InUse: 1, Waiters: 1, Err: context.DeadlineExceeded}), 1},
		{"deadline-cause:1", notSent(fmt.Errorf("checkout: %w", context.DeadlineExceeded)), 1},
		{"exhausted:1", notSent(&pool.ExhaustedError{Size: 1, InUse: 1, Waiters: 1}), 1},
		{"cancelled:1", notSent(&pool.ExhaustedError{Size: 1, InUse: 1, Waiters: 1, Err: context.Canceled}), 0},
		{"cancelled-bare:1", notSent(context.Canceled), 0},
		{"pool-closed:1", notSent(pool.ErrClosed), 0},
		{"client-closed:1", respire.ErrClosed, 0},
		{"granted:1", nil, 0},
	} {
		h.obs.PoolWait(observe.PoolWait{Addr: tc.addr, Wait: time.Millisecond, Err: tc.err})
		name := poolNameKey.String(tc.addr)
		if n := h.sum(t, "db.client.connection.timeouts", name); n != tc.n {
			t.Errorf("%s (%v): %d timeouts, want %d", tc.addr, tc.err, n, tc.n)
		}
		if n := h.count(t, "db.client.connection.wait_time", name); n != 1 {
			t.Errorf("%s: %d waits recorded, want 1", tc.addr, n)
		}
	}
}
