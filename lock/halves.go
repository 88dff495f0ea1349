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

// startTake sends SET key token NX PX ttl for m, a handle adopted for an acquisition
// not yet sent (Locker.AdoptInto), with its reply waited for until by, and reports
// true; false, having done nothing, when it would have to wait for the connection
// first (Locker.TryTakeBy then does the whole acquisition).
func (m *Lock) startTake(ctx context.Context, c *link.LockCall, by time.Time) bool {
	cn := m.l.ln.ConnAtHand(route.SharedLane, m.key)
	if cn == nil {
		return false
	}
	*c = link.LockCall{Ctx: ctx, By: by, Conn: cn, Lane: route.SharedLane}
	v := viaOf(c)
	m.l.start(ctx, &v, &c.Cmd, keyAt1, "SET", m.key, m.token.b, "NX", "PX", m.ttl.Milliseconds())
	return true
}

// finishTake collects startTake's reply: Locker.TryTakeBy's result.
func (m *Lock) finishTake(c *link.LockCall) (bool, error) {
	v := viaOf(c)
	r, err := m.l.finish(&v, &c.Cmd)
	*c = link.LockCall{}
	if err != nil {
		return false, err
	}
	return !r.IsNull(), nil
}

// viaOf is the via of the command c stands for.
func viaOf(c *link.LockCall) via { return via{cn: c.Conn, lane: c.Lane, by: c.By} }

// startRelease is the first half of ReleaseBy(ctx, by): it takes the lead of the
// release and sends the delete, and reports true. It reports false, having done
// nothing, where ReleaseBy would wait before it sends: for a release in progress (or
// says one is done), for a keep-alive's renewal to stop, for the connection, or for
// the script's digest (conn.Conn.ScriptDigestBy); ReleaseBy then does the whole
// release.
func (m *Lock) startRelease(ctx context.Context, c *link.LockCall, by time.Time) bool {
	lane := releaseLane(ctx, by)
	cn := m.l.ln.ConnAtHand(lane, m.key)
	if cn == nil {
		return false
	}
	caps := cn.Capabilities()
	sha, local := releaseScript.Local()
	if !local && caps.Load(capDelEx) == conn.Unsupported && caps.Load(capDelIfEq) == conn.Unsupported {
		return false
	}
	m.mu.Lock()
	if m.rel.running || m.rel.done || m.ka != nil {
		m.mu.Unlock()
		return false
	}
	m.rel.running = true
	m.mu.Unlock()
	*c = link.LockCall{Ctx: ctx, By: by, Conn: cn, Lane: lane}
	v := viaOf(c)
	c.Step = uint8(m.l.startRelease(ctx, &v, &c.Cmd, m.key, m.token, sha))
	return true
}

// finishRelease collects the delete startRelease sent and ends the release as
// ReleaseBy does, after lead's delete: the tries left after a cut-off, the outcome,
// the callers that joined. It returns ReleaseBy's result.
func (m *Lock) finishRelease(c *link.LockCall) (ReleaseOutcome, error) {
	ctx, by, cn := c.Ctx, c.By, viaOf(c)
	deleted, err := m.l.finishRelease(ctx, &cn, &c.Cmd, m.key, m.token, releaseStep(c.Step))
	*c = link.LockCall{}
	if sendAgain(ctx, by, err, cn.cn) {
		cn, deleted, err = m.releaseTries(ctx, by, 1)
	}
	outcome, err := m.released(ctx, cn, by, deleted, err)
	outcome, err = m.led(ctx, nil, by, true, outcome, err)
	m.reportRelease(ctx, outcome, err)
	return outcome, err
}
