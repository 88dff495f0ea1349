package lock

import (
	"context"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
)

// A Redlock (package coordination) sends its acquisition, then its release, to every
// server before it waits for any reply, from its own goroutine: a goroutine per server
// cost more than the commands (their stacks grow through the whole call path). So the
// managed handle's SET NX and ReleaseBy are split here in a half that sends and a half
// that collects (link.LockHalves), reached through package link so that they add
// nothing to this package's API. A start half that would wait before it sends (a
// dial, a release to join, a keep-alive to halt, the script's digest to ask for)
// declines, and the caller runs the whole call instead, on a goroutine of its own, so
// that one server's wait holds up no other. What the finish half learns calls for
// (the next command after an unknown-command error, EVAL after NOSCRIPT, a fresh
// connection after a cut-off) it does synchronously, as ReleaseBy does.
func init() {
	link.RegisterLockHalves(&link.LockHalves[Lock, ReleaseOutcome]{
		StartTake:     (*Lock).startTake,
		FinishTake:    (*Lock).finishTake,
		StartRelease:  (*Lock).startRelease,
		FinishRelease: (*Lock).finishRelease,
	})
}

// half is a command a handle's halves started, or the result they kept.
type half struct {
	ctx context.Context
	by  time.Time
	cn  via
	s   link.Started
	// Of a release: its step of the chain. (No keep-alive to settle: startRelease
	// leaves a handle with one to ReleaseBy.)
	step releaseStep
	// ready: the start half ended the release (its command could not be started);
	// its result is here.
	ready   bool
	outcome ReleaseOutcome
	err     error
}

// startTake sends SET key token NX PX ttl for m, a handle adopted for an acquisition
// not yet sent (Locker.AdoptInto), with its reply waited for until by, and reports
// true; false, having done nothing, when it would have to wait for the connection
// first (Locker.TryTakeBy then does the whole acquisition).
func (m *Lock) startTake(ctx context.Context, by time.Time) bool {
	cn := m.l.ln.ConnAtHand(route.SharedLane, m.key)
	if cn == nil {
		return false
	}
	h := &m.half
	*h = half{ctx: ctx, by: by, cn: via{cn: cn, lane: route.SharedLane, by: by}}
	m.l.start(ctx, &h.cn, &h.s, keyAt1, "SET", m.key, m.token.b, "NX", "PX", m.ttl.Milliseconds())
	return true
}

// finishTake collects startTake's reply: Locker.TryTakeBy's result.
func (m *Lock) finishTake() (bool, error) {
	h := &m.half
	defer func() { *h = half{} }()
	v, err := m.l.finish(&h.cn, &h.s)
	if err != nil {
		return false, err
	}
	return !v.IsNull(), nil
}

// startRelease is the first half of ReleaseBy(ctx, by): it takes the lead of the
// release and sends the delete, and reports true. It reports false, having done
// nothing, where ReleaseBy would wait before it sends: for a release in progress (or
// says one is done), for a keep-alive's renewal to stop, for the connection, or for
// the script's digest (conn.Conn.ScriptDigestBy); ReleaseBy then does the whole
// release.
func (m *Lock) startRelease(ctx context.Context, by time.Time) bool {
	cn := m.l.ln.ConnAtHand(route.LockLane, m.key)
	if cn == nil {
		return false
	}
	caps := cn.Capabilities()
	if caps.Load(capDelEx) == conn.Unsupported && caps.Load(capDelIfEq) == conn.Unsupported {
		if _, ok := releaseScript.Local(); !ok {
			return false
		}
	}
	m.mu.Lock()
	if m.rel.running || m.rel.done || m.ka != nil {
		m.mu.Unlock()
		return false
	}
	m.rel.running = true
	m.mu.Unlock()
	h := &m.half
	*h = half{ctx: ctx, by: by, cn: via{cn: cn, lane: route.LockLane, by: by}}
	var err error
	if h.step, err = m.l.startRelease(ctx, &h.cn, &h.s, m.key, m.token); err != nil {
		h.ready = true
		h.outcome, h.err = m.releasedAfter(false, err)
	}
	return true
}

// finishRelease collects the delete startRelease sent and ends the release as
// ReleaseBy does: ReleaseBy's result.
func (m *Lock) finishRelease() (ReleaseOutcome, error) {
	h := &m.half
	defer func() { *h = half{} }()
	if h.ready {
		return h.outcome, h.err
	}
	return m.releasedAfter(m.l.finishRelease(h.ctx, &h.cn, &h.s, m.key, m.token, h.step))
}

// releasedAfter ends the release of the halves once its first try ended with deleted
// and err: the tries left after a cut-off, then what ReleaseBy does after lead's
// delete.
func (m *Lock) releasedAfter(deleted bool, err error) (ReleaseOutcome, error) {
	h := &m.half
	cn := h.cn
	if sendAgain(h.ctx, h.by, err, cn.cn) {
		cn, deleted, err = m.releaseTries(h.ctx, h.by, 1)
	}
	outcome, err := m.released(cn, h.by, deleted, err)
	outcome, err = m.led(h.ctx, nil, h.by, true, outcome, err)
	m.reportRelease(h.ctx, outcome, err)
	return outcome, err
}
