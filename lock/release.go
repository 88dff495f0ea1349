package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/resp"
)

// ReleaseOutcome is what Release found.
type ReleaseOutcome uint8

const (
	// Released: the key held this lock's token and was deleted.
	Released ReleaseOutcome = iota + 1
	// AlreadyReleased: this handle released the lock before.
	AlreadyReleased
	// NotOwned: the key had expired or held another owner's token; nothing was deleted.
	NotOwned
)

func (o ReleaseOutcome) String() string {
	switch o {
	case Released:
		return "released"
	case AlreadyReleased:
		return "already released"
	case NotOwned:
		return "not owned"
	}
	return "none"
}

// releaseState is where the handle's release stands. Callers that join a release in
// progress share one releaseWaiters, made only when someone joins.
type releaseState struct {
	running bool
	done    bool           // a release finished with an outcome (no error)
	outcome ReleaseOutcome // of the finished release
	waiters *releaseWaiters
	joined  *KeepAlive // asked for while the release runs: it never renews, the release settles it
}

type releaseWaiters struct {
	done    chan struct{}
	outcome ReleaseOutcome
	err     error
	again   bool // the release ended unsent with its caller's context: a joiner sends it
}

// Release deletes the lock if it still holds this handle's token. Concurrent calls
// share one release; a caller that joined another's release stops waiting when its
// own ctx ends, and the shared release goes on. A joiner never takes another caller's
// cancellation for its result: when the caller that sends the release gives up
// before the delete was sent, a joiner whose ctx is live sends it.
//
// A keep-alive stops renewing before the delete is sent (Release waits for a renewal
// in progress), and its context ends once the outcome is known, with a cause that says
// it: ErrReleased after the delete, ErrLeaseLost when the key held no longer this
// token, ErrOwnershipUncertain when the delete's outcome is unknown, and
// ErrKeepAliveStopped, with the release's error, when the lock is still held.
//
// Cancelled before the delete was sent (the error matches conn.ErrNotSent), the lock is
// still held and Release can be called again. Cancelled or timed out after it may have
// been sent (ErrOwnershipUncertain, conn.ErrOutcomeUnknown), the handle counts the lock
// as lost and severs the connection (CLIENT KILL); a later Release sends the
// compare-and-delete again, which is safe: it can only ever delete this token. Release
// waits for the cut-off only while ctx is live: a Release whose ctx has a deadline
// returns by it, and the cut-off goes on without it.
func (m *Lock) Release(ctx context.Context) (ReleaseOutcome, error) {
	return m.ReleaseBy(ctx, time.Time{})
}

// ReleaseBy is Release whose delete is waited for until by at the latest (zero: no
// bound), failing then as under a context with that deadline, without deriving such a
// context: for code that bounds each of many releases, as package coordination's
// Redlock bounds each server's part. Every wait ends at by: for the connection, for a
// renewal in progress to stop, and for a release in progress that the caller joins
// (whose outcome it then does not learn, as under a context with that deadline). A
// delete that was written when by passed is not cut off (no CLIENT KILL): the cut-off
// would wait past by, and the delete can only ever remove this token; the lock counts
// as lost (ErrOwnershipUncertain) as after Release's cut-off.
func (m *Lock) ReleaseBy(ctx context.Context, by time.Time) (ReleaseOutcome, error) {
	for {
		m.mu.Lock()
		switch rs := &m.rel; {
		case rs.running:
			if rs.waiters == nil {
				rs.waiters = &releaseWaiters{done: make(chan struct{})}
			}
			w := rs.waiters
			m.mu.Unlock()
			switch again, err := w.wait(ctx, by); {
			case err != nil:
				return 0, err
			case again:
				continue
			}
			return w.outcome, w.err
		case rs.done && rs.outcome == Released:
			m.mu.Unlock()
			m.reportRelease(ctx, AlreadyReleased, nil)
			return AlreadyReleased, nil
		case rs.done:
			outcome := rs.outcome
			m.mu.Unlock()
			m.reportRelease(ctx, outcome, nil)
			return outcome, nil
		}
		m.rel.running = true
		ka := m.ka
		m.mu.Unlock()
		outcome, err := m.lead(ctx, ka, by)
		// One event per release sent: the callers that joined it report nothing.
		m.reportRelease(ctx, outcome, err)
		return outcome, err
	}
}

// lead runs the release that concurrent callers share.
func (m *Lock) lead(ctx context.Context, ka *KeepAlive, by time.Time) (ReleaseOutcome, error) {
	var outcome ReleaseOutcome
	stopped, err := halt(ctx, ka, by)
	if err == nil {
		outcome, err = m.release(ctx, by)
	}
	return m.led(ctx, ka, by, stopped, outcome, err)
}

// halt stops ka, the keep-alive of a lock about to be released, if there is one
// (KeepAlive.haltForRelease); stopped is true when none runs.
func halt(ctx context.Context, ka *KeepAlive, by time.Time) (stopped bool, err error) {
	if ka == nil {
		return true, nil
	}
	return ka.haltForRelease(ctx, by)
}

// led ends the release lead ran, which ended with outcome and err: it settles the
// keep-alive ka (stopped: none of its renewals runs any more) and hands the result to
// the callers that joined.
func (m *Lock) led(ctx context.Context, ka *KeepAlive, by time.Time, stopped bool, outcome ReleaseOutcome, err error) (ReleaseOutcome, error) {
	if ka != nil {
		// The lock's context ended already when it is lost; ka's ends before Release
		// returns.
		ka.settle(m.lost(), err, stopped)
	}

	m.mu.Lock()
	w, joined := m.rel.waiters, m.rel.joined
	m.rel = releaseState{done: err == nil, outcome: outcome}
	lost := m.lostCause
	m.mu.Unlock()
	if joined != nil {
		joined.settle(lost, err, true)
	}
	if w != nil {
		w.outcome, w.err = outcome, joinedErr(ctx, by, err)
		w.again = gaveUp(ctx, by) && releaseUnsent(err)
		close(w.done)
	}
	return outcome, err
}

// wait waits for the release that w's callers joined, until ctx ends or by passes
// (zero: no bound), whose error it then returns, as a context with that deadline
// would end the wait. again says that the release sent nothing and the caller, still
// waiting, may lead the next one.
func (w *releaseWaiters) wait(ctx context.Context, by time.Time) (again bool, err error) {
	var expired <-chan time.Time
	if !by.IsZero() {
		// Only a caller that finds a release in progress and has a deadline pays for
		// the timer.
		t := time.NewTimer(time.Until(by))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-w.done:
		switch {
		case w.again && ctx.Err() == nil && (by.IsZero() || time.Now().Before(by)):
			return true, nil
		case w.again && ctx.Err() != nil:
			return false, context.Cause(ctx) // its own cancellation, not the leader's
		case w.again:
			return false, context.DeadlineExceeded // its own deadline passed
		}
		return false, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	case <-expired:
		return false, context.DeadlineExceeded
	}
}

// joinedErr is the leader's release error as the callers that joined it get it. When
// the leader's own context ended (or its deadline by passed) the release after the
// delete may have been sent, the outcome is the joiners' too (ownership uncertain), but
// the cancellation is not: a joiner without a deadline must not match
// context.DeadlineExceeded. Their error says the outcome is unknown because the caller
// that sent the delete stopped waiting.
func joinedErr(ctx context.Context, by time.Time, err error) error {
	if err == nil || !conn.WasWritten(err) || !gaveUp(ctx, by) {
		return err
	}
	if !errors.Is(err, ctx.Err()) && !errors.Is(err, context.Cause(ctx)) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	lost := &conn.CallError{Written: true, Err: errLeaderGaveUp}
	if errors.Is(err, ErrOwnershipUncertain) {
		return fmt.Errorf("%w: %w", ErrOwnershipUncertain, lost)
	}
	return lost
}

// gaveUp reports whether a caller with ctx and the deadline by (zero: none) has
// stopped waiting.
func gaveUp(ctx context.Context, by time.Time) bool {
	return ctx.Err() != nil || !by.IsZero() && !time.Now().Before(by)
}

// releaseUnsent says that a failed release sent no delete.
func releaseUnsent(err error) bool {
	_, refused := resp.AsServerError(err)
	return err != nil && !conn.WasWritten(err) && !refused
}

// release sends the compare-and-delete, again on a fresh connection while a cut-off
// killed it unsent, and says what became of the lock.
func (m *Lock) release(ctx context.Context, by time.Time) (ReleaseOutcome, error) {
	cn, deleted, err := m.releaseTries(ctx, by, 0)
	return m.released(ctx, cn, by, deleted, err)
}

// releaseTries sends the compare-and-delete, from the try numbered try on (of
// maxUnsentReleases+1), and returns the connection of the last and its result.
func (m *Lock) releaseTries(ctx context.Context, by time.Time, try int) (cn via, deleted bool, err error) {
	for ; ; try++ {
		if cn, err = m.l.laneRouteBy(ctx, by, releaseLane(ctx, by), m.key); err != nil {
			return cn, false, err
		}
		deleted, err = m.l.release(ctx, &cn, m.key, m.token)
		if !sendAgain(ctx, by, err, cn.cn) || try == maxUnsentReleases {
			return cn, deleted, err
		}
	}
}

// sendAgain says that a delete that failed with err on cn goes again on a fresh
// connection: another lock's cut-off killed cn before the delete was written, so
// nothing ran. (One that was written is not repeated: a second delete would say
// NotOwned of a lock the first released.) Past by, the caller has stopped waiting, as
// if its ctx had ended.
func sendAgain(ctx context.Context, by time.Time, err error, cn *conn.Conn) bool {
	return errors.Is(err, conn.ErrNotSent) && killedUnder(ctx, err, cn) && (by.IsZero() || time.Now().Before(by))
}

// released is what a delete that ended with deleted and err on cn says became of the
// lock: the outcome, or the error, for which a delete that may have run counts the
// lock as lost and, without a deadline by, cuts cn off, waiting for that while ctx is
// live (Locker.cutOff).
func (m *Lock) released(ctx context.Context, cn via, by time.Time, deleted bool, err error) (ReleaseOutcome, error) {
	switch {
	case err != nil:
		if conn.WasWritten(err) {
			m.lose(ErrOwnershipUncertain)
			// Past by, a cut-off would outlive it (it dials, and waits for its CLIENT
			// KILL, for up to severTimeout); the delete left behind can only remove
			// this token. Nor is a live shared connection cut off: other callers wait
			// on it (a release goes there only when its own context cannot end, but
			// an observer's CommandStart may hand the command one that can).
			if by.IsZero() && (cn.lane != route.SharedLane || cn.cn.Err() != nil) {
				m.l.cutOff(ctx, cn.cn)
			}
			return 0, fmt.Errorf("%w: %w", ErrOwnershipUncertain, err)
		}
		return 0, err
	case deleted:
		m.lose(ErrReleased)
		if m.l.handoff != nil {
			m.l.handoff.released(m.key)
		}
		return Released, nil
	}
	m.lose(ErrLeaseLost)
	return NotOwned, nil
}

// Close releases the lock on a best-effort basis, as a deferred call should: it stops
// the keep-alive and releases within a few seconds, and suppresses the failures that
// expiry makes harmless (connection loss or refusal, a failed handshake, timeouts,
// cancellation, a closed client). Other errors, such as NOPERM, are returned. Close on
// a nil *Lock does nothing, so that defer mu.Close() may come before checking ok.
func (m *Lock) Close() error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(m.ttl, closeTimeout))
	defer cancel()
	_, err := m.Release(ctx)
	if err == nil || harmless(err) {
		return nil
	}
	return err
}

const closeTimeout = 5 * time.Second

// maxUnsentReleases bounds the tries of a release whose connection other locks' cut-offs
// keep killing before it is written.
const maxUnsentReleases = 3

// harmless says whether a failed release is covered by the lock's expiry. A lock
// connection that cannot be dialled or handshaken fails as a *conn.CallError (not
// sent); a network error from elsewhere counts too.
func harmless(err error) bool {
	var ce *conn.CallError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, route.ErrClosed)
}

func isNoPerm(err error) bool { return resp.HasCode(err, "NOPERM") }
