package respire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// logRecords is a slog.Handler that keeps every record, rendered as
// "LEVEL message key=value ...".
type logRecords struct {
	mu    sync.Mutex
	lines []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, b.String())
	h.mu.Unlock()
	return nil
}

func (h *logRecords) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

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
			o.Conn(observe.Conn{Kind: observe.ConnSubscriptionRefused, Addr: "a:1", Err: &RefusedChannelError{Name: "secret", Err: boom}})
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
			h := &logRecords{}
			tc.event(newLogObserver(slog.New(h)))
			if got := h.all(); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("lines:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
	if newLogObserver(nil) != nil {
		t.Error("newLogObserver(nil) is not nil")
	}
}

// A client with a Logger logs a killed connection and its reconnection, with the
// server's address and without the password.
func TestLoggerReconnect(t *testing.T) {
	const password = "log-test-secret"
	srv := testserver.Start(t, testserver.Config{RequirePass: password})
	h := &logRecords{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Password: password, Logger: slog.New(h)})
	ctx := context.Background()
	id, err := c.Do(ctx, "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := id.Int()
	if got := h.all(); len(got) != 0 {
		t.Fatalf("lines before any loss: %q", got)
	}
	srv.Do(t, "CLIENT", "KILL", "ID", fmt.Sprint(n))
	testkit.WaitFor(t, "the reconnect line", func() bool {
		c.Do(ctx, "PING") // the first may fail with the lost connection
		for _, l := range h.all() {
			if strings.HasPrefix(l, "INFO respire: reconnected ") {
				return true
			}
		}
		return false
	})
	lines := h.all()
	if !strings.HasPrefix(lines[0], "WARN respire: connection lost addr="+srv.Addr()+" err=") {
		t.Errorf("first line %q, want the loss of the connection to %s", lines[0], srv.Addr())
	}
	if want := "INFO respire: reconnected addr=" + srv.Addr() + " duration="; !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("last line %q, want %q...", lines[len(lines)-1], want)
	}
	for _, l := range lines {
		if strings.Contains(l, password) {
			t.Errorf("a line holds the password: %q", l)
		}
	}
	t.Logf("lines: %q", lines)
}
