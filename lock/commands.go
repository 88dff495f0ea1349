package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/script"
	"github.com/respire/respire/resp"
)

// Capability names in a connection's capability memory. Each is learned only from a
// definitive reply on that connection, and a new connection learns afresh.
const (
	capSetIfEq = "lock.set-ifeq"    // SET key value IFEQ cmp PX ms
	capDelEx   = "lock.delex"       // DELEX key IFEQ value (Redis 8.4+)
	capDelIfEq = "lock.delifeq"     // DELIFEQ key value (Valkey 9.0+)
	capSever   = "lock.client-kill" // the user may run CLIENT KILL
)

var (
	//go:embed scripts/extend.lua
	extendSource string
	//go:embed scripts/release.lua
	releaseSource string

	// Hashed on first use, not here: in FIPS 140-only mode SHA-1 panics.
	extendScript  = script.New(extendSource)
	releaseScript = script.New(releaseSource)
)

// Key positions of the commands, for the client's key prefix.
var (
	keyAt1 = []int{1} // SET/GET/DELEX/DELIFEQ key ...
	keyAt3 = []int{3} // EVALSHA sha 1 key ...
)

// via is the connection a lock operation's commands go to. It starts as the
// connection that serves the key: the shared one for commands that are never cut off,
// the lock lane (route.LockLane) for the managed renewals and releases that may be, so
// that a cut-off never kills the connection other callers' commands share. After a
// Cluster redirection (MOVED, ASK) it is the connection of the node that answered (on
// the same lane), so that what a reply teaches is remembered on the connection that
// gave it, and a cut-off targets the connection that carried the command.
type via struct {
	cn   *conn.Conn
	lane route.Lane // route.LockLane: its commands may be cut off
	by   time.Time  // when the caller stops waiting for each reply (conn.CallOptions.Deadline); zero for never
}

// route returns the via for key, on the shared connection.
func (l *Locker) route(ctx context.Context, key string) (via, error) {
	return l.routeBy(ctx, time.Time{}, key)
}

// routeBy is route whose connection is waited for until by at the latest (zero: no
// bound), as the via's replies are.
func (l *Locker) routeBy(ctx context.Context, by time.Time, key string) (via, error) {
	cn, err := l.ln.ConnBy(ctx, by, route.SharedLane, key)
	return via{cn: cn, lane: route.SharedLane, by: by}, err
}

// severableRoute returns the via for key on the lock lane, for commands that may be
// cut off.
func (l *Locker) severableRoute(ctx context.Context, key string) (via, error) {
	return l.severableRouteBy(ctx, time.Time{}, key)
}

// severableRouteBy is severableRoute whose connection is waited for until by at the
// latest (zero: no bound), as the via's replies are.
func (l *Locker) severableRouteBy(ctx context.Context, by time.Time, key string) (via, error) {
	return l.laneRouteBy(ctx, by, route.LockLane, key)
}

// laneRouteBy is the via for key on lane, whose connection is waited for until by at
// the latest (zero: no bound), as the via's replies are.
func (l *Locker) laneRouteBy(ctx context.Context, by time.Time, lane route.Lane, key string) (via, error) {
	cn, err := l.ln.ConnBy(ctx, by, lane, key)
	return via{cn: cn, lane: lane, by: by}, err
}

// releaseLane is the lane of a managed release (Lock.ReleaseBy) with ctx and the
// deadline by. A release is cut off (released) only when it has no deadline and its
// outcome is unknown. With a ctx that can end, that happens on a live connection, so
// it goes on the lock lane, whose cut-off kills no other caller's command. Without a
// ctx that can end, its outcome is unknown only once its connection broke, which
// failed every command on it: a cut-off then kills nothing another caller still
// waits for. Such a release, and one with a deadline, which is never cut off, go on
// the shared connection, joining its batches rather than splitting the lock's cycle
// over two connections.
func releaseLane(ctx context.Context, by time.Time) route.Lane {
	if by.IsZero() && ctx.Done() != nil {
		return route.LockLane
	}
	return route.SharedLane
}

// do runs one lock command on v with the client's key prefix on the key at keys,
// following Cluster redirections (which say the command did not run) on v's lane.
func (l *Locker) do(ctx context.Context, v *via, keys []int, args ...any) (resp.Value, error) {
	o := conn.CallOptions{KeyPrefix: l.ln.Prefix, Keys: keys, Deadline: v.by}
	var r resp.Value
	var err error
	r, v.cn, err = l.ln.Do(ctx, v.cn, v.lane, o, args...)
	return r, err
}

// start is the first half of do: it sends the command on v without waiting for its
// reply, which finish collects.
func (l *Locker) start(ctx context.Context, v *via, s *link.Started, keys []int, args ...any) {
	o := conn.CallOptions{KeyPrefix: l.ln.Prefix, Keys: keys, Deadline: v.by}
	l.ln.Start(ctx, s, v.cn, v.lane, o, args...)
}

// finish is the second half of do.
func (l *Locker) finish(v *via, s *link.Started) (resp.Value, error) {
	var r resp.Value
	var err error
	r, v.cn, err = l.ln.Finish(s)
	return r, err
}

// acquire is SET key token NX PX ms.
func (l *Locker) acquire(ctx context.Context, cn *via, key string, t Token, ms int64) (bool, error) {
	v, err := l.do(ctx, cn, keyAt1, "SET", key, t.b, "NX", "PX", ms)
	if err != nil {
		return false, err
	}
	return !v.IsNull(), nil
}

// extend sets the key's TTL to ms if it holds t: natively with SET ... IFEQ ... PX,
// or with the compare-and-PEXPIRE script once this connection's server has answered
// that SET with "ERR syntax error" (which means it did not run).
func (l *Locker) extend(ctx context.Context, cn *via, key string, t Token, ms int64) (bool, error) {
	if cn.cn.Capabilities().Load(capSetIfEq) != conn.Unsupported {
		v, err := l.do(ctx, cn, keyAt1, "SET", key, t.b, "IFEQ", t.b, "PX", ms)
		caps := cn.cn.Capabilities() // of the connection that answered
		switch {
		case err == nil:
			caps.Store(capSetIfEq, conn.Supported)
			return !v.IsNull(), nil
		case !resp.IsSyntaxError(err):
			return false, err
		}
		caps.Store(capSetIfEq, conn.Unsupported)
	}
	// Scripts run by EVALSHA, and by EVAL after NOSCRIPT (which says nothing ran).
	sha, err := extendScript.OnBy(ctx, cn.cn, cn.by)
	if err != nil {
		return false, err
	}
	v, err := l.do(ctx, cn, keyAt3, "EVALSHA", sha, 1, key, t.b, ms)
	if resp.IsNoScript(err) {
		v, err = l.do(ctx, cn, keyAt3, "EVAL", extendScript.Source(), 1, key, t.b, ms)
	}
	if err != nil {
		return false, err
	}
	n, err := v.Int()
	return n == 1, err
}

// release deletes the key if it holds t: DELEX, then DELIFEQ, then the compare-and-delete
// script, each step only after the previous command's standard unknown-command error.
func (l *Locker) release(ctx context.Context, cn *via, key string, t Token) (bool, error) {
	return l.releaseFrom(ctx, cn, key, t, stepDelEx)
}

// releaseStep is a command of release's chain.
type releaseStep uint8

const (
	stepDelEx   releaseStep = iota // DELEX key IFEQ token
	stepDelIfEq                    // DELIFEQ key token
	stepScript                     // EVALSHA of the compare-and-delete script (EVAL after NOSCRIPT)
)

// releaseFrom is release from the step from on, the steps before it having been
// answered with the unknown-command error.
func (l *Locker) releaseFrom(ctx context.Context, cn *via, key string, t Token, from releaseStep) (bool, error) {
	if from <= stepDelEx && cn.cn.Capabilities().Load(capDelEx) != conn.Unsupported {
		v, err := l.do(ctx, cn, keyAt1, "DELEX", key, "IFEQ", t.b)
		if done, ok, err := settle(cn.cn.Capabilities(), capDelEx, "DELEX", v, err); done {
			return ok, err
		}
	}
	if from <= stepDelIfEq && cn.cn.Capabilities().Load(capDelIfEq) != conn.Unsupported {
		v, err := l.do(ctx, cn, keyAt1, "DELIFEQ", key, t.b)
		if done, ok, err := settle(cn.cn.Capabilities(), capDelIfEq, "DELIFEQ", v, err); done {
			return ok, err
		}
	}
	sha, err := releaseScript.OnBy(ctx, cn.cn, cn.by)
	if err != nil {
		return false, err
	}
	v, err := l.do(ctx, cn, keyAt3, "EVALSHA", sha, 1, key, t.b)
	return l.scriptReleased(ctx, cn, key, t, v, err)
}

// scriptReleased interprets the reply of the script's EVALSHA, running it by EVAL
// after NOSCRIPT (which says nothing ran).
func (l *Locker) scriptReleased(ctx context.Context, cn *via, key string, t Token, v resp.Value, err error) (bool, error) {
	if resp.IsNoScript(err) {
		v, err = l.do(ctx, cn, keyAt3, "EVAL", releaseScript.Source(), 1, key, t.b)
	}
	if err != nil {
		return false, err
	}
	n, err := v.Int()
	return n == 1, err
}

// startRelease is the first half of release: it sends the first command of the chain
// the connection's capability memory allows, without waiting for its reply, and
// returns its step; finishRelease collects it. sha is the script's digest, computed
// in this process (script.Script.Local): the caller asks the server for it
// (conn.Conn.ScriptDigestBy) with release instead.
func (l *Locker) startRelease(ctx context.Context, cn *via, s *link.Started, key string, t Token, sha string) releaseStep {
	caps := cn.cn.Capabilities()
	switch {
	case caps.Load(capDelEx) != conn.Unsupported:
		l.start(ctx, cn, s, keyAt1, "DELEX", key, "IFEQ", t.b)
		return stepDelEx
	case caps.Load(capDelIfEq) != conn.Unsupported:
		l.start(ctx, cn, s, keyAt1, "DELIFEQ", key, t.b)
		return stepDelIfEq
	}
	l.start(ctx, cn, s, keyAt3, "EVALSHA", sha, 1, key, t.b)
	return stepScript
}

// finishRelease is the second half of release, for the command startRelease started
// at step: the rest of the chain (after an unknown-command error) and EVAL after
// NOSCRIPT run here, as release runs them.
func (l *Locker) finishRelease(ctx context.Context, cn *via, s *link.Started, key string, t Token, step releaseStep) (bool, error) {
	v, err := l.finish(cn, s)
	switch step {
	case stepDelEx:
		if done, ok, err := settle(cn.cn.Capabilities(), capDelEx, "DELEX", v, err); done {
			return ok, err
		}
		return l.releaseFrom(ctx, cn, key, t, stepDelIfEq)
	case stepDelIfEq:
		if done, ok, err := settle(cn.cn.Capabilities(), capDelIfEq, "DELIFEQ", v, err); done {
			return ok, err
		}
		return l.releaseFrom(ctx, cn, key, t, stepScript)
	}
	return l.scriptReleased(ctx, cn, key, t, v, err)
}

// settle interprets the reply of a native conditional delete. done is false only after
// the standard unknown-command error, which is remembered as the connection's server
// lacking the command; anything else (success, any other error) is final.
func settle(caps *conn.Capabilities, capName, cmd string, v resp.Value, err error) (done, deleted bool, _ error) {
	switch {
	case err == nil:
		caps.Store(capName, conn.Supported)
		n, err := v.Int()
		return true, n == 1, err
	case resp.IsUnknownCommand(err, cmd):
		caps.Store(capName, conn.Unsupported)
		return false, false, nil
	}
	return true, false, err
}

// owner is GET key.
func (l *Locker) owner(ctx context.Context, cn *via, key string) (Token, bool, error) {
	v, err := l.do(ctx, cn, keyAt1, "GET", key)
	if err != nil || v.IsNull() {
		return Token{}, false, err
	}
	s, err := v.Text()
	if err != nil {
		return Token{}, false, err
	}
	return Token{b: s}, true, nil
}
