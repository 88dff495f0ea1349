package route

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

// Retryable says whether a failed command may be sent again on a new connection:
// only when it never reached the server, or when it is read-only by its entry info
// (the caller's, nil when it has none), and never after the caller gave up.
func Retryable(ctx context.Context, err error, info *command.Info) bool {
	var ce *conn.CallError
	if ctx.Err() != nil || !errors.As(err, &ce) {
		return false
	}
	return !ce.Written || readOnly(info)
}

// batchRetryable says whether a failed batch may be sent again: only when none of it
// was written.
func batchRetryable(ctx context.Context, err error) bool {
	return !conn.WasWritten(err) && Retryable(ctx, err, nil)
}

// Reusable says whether a dedicated connection can go back to the pool after err: not
// when a command may still be running on it (its reply would reach the next user).
func Reusable(err error) bool {
	var ce *conn.CallError
	return !errors.As(err, &ce)
}

// readOnly reports whether info, a command's entry in the caller's table (nil: it
// has none), marks it read-only. The router never looks a command up itself: the
// caller's table knows what COMMAND INFO taught it, so that both agree.
func readOnly(info *command.Info) bool {
	return info != nil && info.Flags&command.FlagReadonly != 0
}

// backoff is the wait before retry n (from 1) after TRYAGAIN or CLUSTERDOWN: 10ms
// doubling, at most 320ms, so the retries span about a second and a half.
func backoff(n int) time.Duration {
	return min(10*time.Millisecond<<min(n-1, 5), 320*time.Millisecond)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &conn.CallError{Err: context.Cause(ctx)}
	}
}
