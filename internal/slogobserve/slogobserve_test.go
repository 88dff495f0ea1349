package slogobserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"go.uber.org/goleak"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
)

// TestMain checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refusedChannel stands in for a *respire.RefusedChannelError, which this package
// cannot import: an error whose text names the channel and which wraps the server's
// refusal.
type refusedChannel struct {
	name string
	err  error
}

func (e *refusedChannel) Error() string { return "refused channel " + e.name + ": " + e.err.Error() }

func (e *refusedChannel) Unwrap() error { return e.err }

// Which events make a line, at which level, with which attributes.
func TestLogObserverLines(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		event func(o observe.Observer)
		want  []string
	}{
		{"dial without a loss", func(o observe.Observer) { o.Conn(observe.Conn{Kind: observe.ConnDialed, Addr: "a:1"}) }, nil},
		{"loss then reconnect", func(o observe.Observer) {
			o.Conn(observe.Conn{Kind: observe.ConnLost, Addr: "a:1", Err: boom})
			o.Conn(observe.Conn{Kind: observe.ConnDialed, Addr: "b:1"}) // another server's
			o.Conn(observe.Conn{Kind: observe.ConnDialed, Addr: "a:1"})
			o.Conn(observe.Conn{Kind: observe.ConnDialed, Addr: "a:1"}) // one loss, one reconnect
		}, []string{"WARN respire: connection lost addr=a:1 err=boom", "INFO respire: reconnected addr=a:1 duration=0s"}},
		{"dial failed", func(o observe.Observer) { o.Conn(observe.Conn{Kind: observe.ConnDialFailed, Addr: "a:1", Err: boom}) },
			[]string{"WARN respire: dial failed addr=a:1 duration=0s err=boom"}},
		{"reauth", func(o observe.Observer) {
			o.Conn(observe.Conn{Kind: observe.ConnReauth, Addr: "a:1"})
			o.Conn(observe.Conn{Kind: observe.ConnReauth, Addr: "a:1", Err: boom})
		}, []string{"WARN respire: re-authentication failed addr=a:1 err=boom"}},
		{"subscription refused", func(o observe.Observer) {
			o.Conn(observe.Conn{Kind: observe.ConnSubscriptionRefused, Addr: "a:1", Err: &refusedChannel{name: "secret", err: boom}})
		}, []string{"WARN respire: subscription dropped a channel or pattern the server refused addr=a:1 err=boom"}},
		{"failover", func(o observe.Observer) {
			o.Failover(observe.Failover{Master: "m", To: "a:1"})
			o.Failover(observe.Failover{Master: "m", From: "a:1", To: "b:1"})
		}, []string{"INFO respire: following new master master=m from= to=a:1", "WARN respire: following new master master=m from=a:1 to=b:1"}},
		{"topology", func(o observe.Observer) {
			o.Topology(observe.Topology{Addr: "a:1", Nodes: 3})
			o.Topology(observe.Topology{Addr: "a:1", Nodes: 3, Changed: true})
			o.Topology(observe.Topology{Addr: "a:1", Err: boom})
		}, []string{"INFO respire: topology changed addr=a:1 masters=3 duration=0s", "WARN respire: topology refresh failed addr=a:1 duration=0s err=boom"}},
		{"fence", func(o observe.Observer) {
			o.Cutoff(observe.Cutoff{Addr: "a:1", ClientID: 7})
			o.Cutoff(observe.Cutoff{Addr: "a:1", ClientID: 8, Err: boom})
		}, []string{"WARN respire: lock cut off a connection addr=a:1 client_id=7", "WARN respire: lock cut off a connection addr=a:1 client_id=8 err=boom"}},
		{"cache", func(o observe.Observer) {
			for _, k := range []observe.CacheKind{observe.CacheHit, observe.CacheMiss, observe.CacheInvalidate, observe.CacheFlush} {
				o.Cache(observe.Cache{Kind: k, Addr: "a:1"})
			}
			o.Cache(observe.Cache{Kind: observe.CacheTrackingLost, Addr: "a:1"})
		}, []string{"WARN respire: cache tracking connection lost; cache flushed addr=a:1"}},
		{"commands and batches", func(o observe.Observer) {
			o.CommandEnd(context.Background(), observe.CommandEnd{Name: "GET", Err: boom})
			o.BatchEnd(context.Background(), observe.BatchEnd{Err: boom})
			o.PoolWait(observe.PoolWait{Err: boom})
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &testkit.LogRecorder{}
			tc.event(New(slog.New(h)))
			if got := h.Lines(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("lines:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
	if New(nil) != nil {
		t.Error("New(nil) is not nil")
	}
}
