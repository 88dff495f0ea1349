package lock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/pool"
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
}

type releaseWaiters struct {
	done    chan struct{}
	outcome ReleaseOutcome
	err     error
}

// Release deletes the lock if it still holds this handle's token, after stopping any
// keep-alive. Concurrent calls share one release; a caller that joined another's
// release stops waiting when its own ctx ends, and the shared release goes on.
//
// Cancelled before the delete was sent (the error matches conn.ErrNotSent), the lock is
// still held and Release can be called again. Cancelled or timed out after it may have
// been sent (conn.ErrOutcomeUnknown), the handle counts the lock as lost and fences the
// connection (CLIENT KILL); a later Release sends the compare-and-delete again, which is
// safe: it can only ever delete this token.
func (m *Lock) Release(ctx context.Context) (ReleaseOutcome, error) {
	m.mu.Lock()
	switch rs := &m.rel; {
	case rs.running:
		if rs.waiters == nil {
			rs.waiters = &releaseWaiters{done: make(chan struct{})}
		}
		w := rs.waiters
		m.mu.Unlock()
		select {
		case <-w.done:
			return w.outcome, w.err
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	case rs.done && rs.outcome == Released:
		m.mu.Unlock()
		return AlreadyReleased, nil
	case rs.done:
		m.mu.Unlock()
		return rs.outcome, nil
	}
	m.rel.running = true
	ka := m.ka
	m.mu.Unlock()

	if ka != nil {
		ka.stop(ErrReleased, false)
	}
	outcome, err := m.release(ctx)

	m.mu.Lock()
	w := m.rel.waiters
	m.rel = releaseState{done: err == nil, outcome: outcome}
	m.mu.Unlock()
	if w != nil {
		w.outcome, w.err = outcome, err
		close(w.done)
	}
	return outcome, err
}

func (m *Lock) release(ctx context.Context) (ReleaseOutcome, error) {
	cn, err := m.l.route(ctx, m.key)
	if err != nil {
		return 0, err
	}
	deleted, err := m.l.release(ctx, &cn, m.key, m.token)
	switch {
	case err != nil:
		if conn.WasWritten(err) {
			m.lose(ErrOwnershipUncertain)
			m.l.fence(cn.cn)
		}
		return 0, err
	case deleted:
		m.lose(ErrReleased)
		return Released, nil
	}
	m.lose(ErrLeaseLost)
	return NotOwned, nil
}

// Close releases the lock on a best-effort basis, as a deferred call should: it stops
// the keep-alive and releases within a few seconds, and suppresses the failures that
// expiry makes harmless (connection loss, timeouts, cancellation, a closed client).
// Other errors, such as NOPERM, are returned.
func (m *Lock) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), min(m.ttl, closeTimeout))
	defer cancel()
	_, err := m.Release(ctx)
	if err == nil || harmless(err) {
		return nil
	}
	return err
}

const closeTimeout = 5 * time.Second

// harmless says whether a failed release is covered by the lock's expiry.
func harmless(err error) bool {
	var ce *conn.CallError
	return errors.As(err, &ce) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, respire.ErrClosed) || errors.Is(err, pool.ErrClosed)
}

func isNoPerm(err error) bool { return resp.HasCode(err, "NOPERM") }

// isNoSuchClient is CLIENT KILL's reply when the connection is already gone.
func isNoSuchClient(err error) bool {
	var se *resp.ServerError
	return errors.As(err, &se) && strings.Contains(se.Msg, "No such client")
}
