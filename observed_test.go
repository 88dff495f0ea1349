package respire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

func TestOutcomeOf(t *testing.T) {
	wrongType := resp.NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value")
	cases := []struct {
		name string
		err  error
		want observe.Outcome
	}{
		{"nil", nil, observe.OK},
		{"error reply", wrongType, observe.ServerError},
		{"wrapped error reply", fmt.Errorf("command 2: %w", wrongType), observe.ServerError},
		{"too many redirects", fmt.Errorf("%w: %w", ErrTooManyRedirects, resp.NewServerError("MOVED 1 a:1")), observe.ServerError},
		{"watched key changed", ErrTxFailed, observe.ServerError},
		{"queued, context ended", &conn.CallError{Err: context.Canceled}, observe.NotSent},
		{"written, context ended", &conn.CallError{Written: true, Err: context.Canceled}, observe.Unknown},
		{"written, connection lost", &conn.CallError{Written: true, Err: io.EOF}, observe.Unknown},
		{"written, closed", &conn.CallError{Written: true, Err: conn.ErrClosed}, observe.Unknown},
		{"context ended before", context.DeadlineExceeded, observe.NotSent},
		{"client closed", ErrClosed, observe.NotSent},
		{"invalid argument", fmt.Errorf("%w: bad", resp.ErrInvalidArg), observe.NotSent},
		{"empty command", resp.ErrEmptyCommand, observe.NotSent},
		{"cross slot", ErrCrossSlot, observe.NotSent},
		{"credentials", fmt.Errorf("%w: expired", conn.ErrCredentials), observe.NotSent},
		{"unclassified", errors.New("something else"), observe.Unknown},
	}
	for _, tc := range cases {
		if got := outcomeOf(tc.err); got != tc.want {
			t.Errorf("%s: outcomeOf(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
