package slogobserve

import (
	"context"
	"log/slog"
	"sync"

	"github.com/respire/respire/observe"
)

// observer is the Observer that writes respire.Options.Logger's lines: only the events
// an operator wants to read about, never a line per command. Warn: a connection lost,
// a dial failed, a failover, a topology refresh that failed, a connection a lock cut
// off, a tracking connection lost, a re-authentication refused, a subscription's
// channel refused.
// Info: a connection dialled again after one to its server was lost (a reconnect), a
// topology change, the master found at start-up. Attributes are names, addresses,
// counts and errors; never keys, values or credentials.
type observer struct {
	observe.Base
	log *slog.Logger

	mu sync.Mutex
	// lost counts, by server address, the connections lost and not dialled again yet:
	// a dial to an address with losses is a reconnect. It holds one entry per server
	// that lost a connection since its last reconnect.
	lost map[string]int
}

// New returns the Observer that logs to l, or nil for a nil l.
func New(l *slog.Logger) observe.Observer {
	if l == nil {
		return nil
	}
	return &observer{log: l, lost: map[string]int{}}
}

// logf writes one line; the context is Background because these events have no
// caller's context, and a handler must not take them for a request's.
func (o *observer) logf(level slog.Level, msg string, attrs ...slog.Attr) {
	o.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// Conn logs lost connections, failed dials and refused re-authentications, and a dial
// that follows a loss on the same server.
func (o *observer) Conn(e observe.Conn) {
	switch e.Kind {
	case observe.ConnLost:
		o.mu.Lock()
		o.lost[e.Addr]++
		o.mu.Unlock()
		o.logf(slog.LevelWarn, "respire: connection lost", slog.String("addr", e.Addr), errAttr(e.Err))
	case observe.ConnDialFailed:
		o.logf(slog.LevelWarn, "respire: dial failed", slog.String("addr", e.Addr),
			slog.Duration("duration", e.Duration), errAttr(e.Err))
	case observe.ConnDialed:
		o.mu.Lock()
		n := o.lost[e.Addr]
		switch {
		case n > 1:
			o.lost[e.Addr] = n - 1
		case n == 1:
			delete(o.lost, e.Addr)
		}
		o.mu.Unlock()
		if n > 0 {
			o.logf(slog.LevelInfo, "respire: reconnected", slog.String("addr", e.Addr),
				slog.Duration("duration", e.Duration))
		}
	case observe.ConnReauth:
		if e.Err != nil {
			o.logf(slog.LevelWarn, "respire: re-authentication failed", slog.String("addr", e.Addr), errAttr(e.Err))
		}
	case observe.ConnSubscriptionRefused:
		// The server's refusal, not the event's error, whose text names the channel: the
		// error is a *respire.RefusedChannelError, which wraps the refusal.
		err := e.Err
		if rc, ok := err.(interface{ Unwrap() error }); ok {
			err = rc.Unwrap()
		}
		o.logf(slog.LevelWarn, "respire: subscription dropped a channel or pattern the server refused",
			slog.String("addr", e.Addr), errAttr(err))
	}
}

// Failover logs the client following Sentinel to a master: at Info for the first one.
func (o *observer) Failover(e observe.Failover) {
	level := slog.LevelWarn
	if e.From == "" {
		level = slog.LevelInfo
	}
	o.logf(level, "respire: following new master", slog.String("master", e.Master),
		slog.String("from", e.From), slog.String("to", e.To))
}

// Topology logs a refresh of the slot map that changed it or failed.
func (o *observer) Topology(e observe.Topology) {
	switch {
	case e.Err != nil:
		o.logf(slog.LevelWarn, "respire: topology refresh failed", slog.String("addr", e.Addr),
			slog.Duration("duration", e.Duration), errAttr(e.Err))
	case e.Changed:
		o.logf(slog.LevelInfo, "respire: topology changed", slog.String("addr", e.Addr),
			slog.Int("masters", e.Nodes), slog.Duration("duration", e.Duration))
	}
}

// Cutoff logs a lock's CLIENT KILL of a connection.
func (o *observer) Cutoff(e observe.Cutoff) {
	attrs := []slog.Attr{slog.String("addr", e.Addr), slog.Int64("client_id", e.ClientID)}
	if e.Err != nil {
		attrs = append(attrs, errAttr(e.Err))
	}
	o.logf(slog.LevelWarn, "respire: lock cut off a connection", attrs...)
}

// Cache logs the loss of a tracking connection, which dropped what it tracked.
func (o *observer) Cache(e observe.Cache) {
	if e.Kind == observe.CacheTrackingLost {
		o.logf(slog.LevelWarn, "respire: cache tracking connection lost; cache flushed", slog.String("addr", e.Addr))
	}
}

func errAttr(err error) slog.Attr { return slog.Any("err", err) }
