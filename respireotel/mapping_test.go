package respireotel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

func TestLossCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{lock.ErrLeaseLost, causeLeaseLost},
		{fmt.Errorf("renewal: %w", lock.ErrLeaseLost), causeLeaseLost},
		{lock.ErrOwnershipUncertain, causeUncertain},
		{errors.Join(lock.ErrOwnershipUncertain, conn.ErrOutcomeUnknown), causeUncertain},
		{lock.ErrLeaseExpired, causeExpired},
		// Package lock never reports a loss with it; it ends a KeepAliveContext
		// without a keep-alive, which is no LockLost.
		{context.DeadlineExceeded, causeOtherReason},
		{errors.New("something else"), causeOtherReason},
		{nil, causeOtherReason},
	} {
		if got := lossCause(tc.err); got != tc.want {
			t.Errorf("lossCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		outcome observe.Outcome
		err     error
		want    failure
	}{
		{observe.OK, nil, failure{}},
		{observe.ServerError, resp.NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value"), failure{"WRONGTYPE", "WRONGTYPE"}},
		{observe.ServerError, fmt.Errorf("command 2: %w", resp.NewServerError("NOPERM no")), failure{"NOPERM", "NOPERM"}},
		{observe.ServerError, errors.New("not a server error"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError("MASTER_DOWN2 x"), failure{"MASTER_DOWN2", "MASTER_DOWN2"}},
		{observe.ServerError, resp.NewServerError(strings.Repeat("A", 32) + " x"), failure{strings.Repeat("A", 32), strings.Repeat("A", 32)}},
		// A script chooses its error reply's first word: anything not shaped like a
		// prefix is data, kept out of error.type and db.response.status_code.
		{observe.ServerError, resp.NewServerError("user:secret-42 not found"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError("Secret not found"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError("1ERR x"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError("_ERR x"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError("ERR-X x"), failure{errType: "server_error"}},
		{observe.ServerError, resp.NewServerError(strings.Repeat("A", 33) + " x"), failure{errType: "server_error"}},
		{observe.NotSent, conn.ErrNotSent, failure{errType: "not_sent"}},
		{observe.Unknown, conn.ErrOutcomeUnknown, failure{errType: "unknown"}},
	} {
		if got := classify(tc.outcome, tc.err); got != tc.want {
			t.Errorf("classify(%v, %v) = %+v, want %+v", tc.outcome, tc.err, got, tc.want)
		}
	}
}

func TestServerAttrs(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want []attribute.KeyValue
	}{
		{"", nil},
		{"127.0.0.1:6379", []attribute.KeyValue{semconv.ServerAddress("127.0.0.1"), semconv.ServerPort(6379)}},
		{"[::1]:7000", []attribute.KeyValue{semconv.ServerAddress("::1"), semconv.ServerPort(7000)}},
		{"redis.internal:x", []attribute.KeyValue{semconv.ServerAddress("redis.internal")}},
		{"sock", []attribute.KeyValue{semconv.ServerAddress("sock")}},
	} {
		if got := serverAttrs(tc.addr); !slices.Equal(got, tc.want) {
			t.Errorf("serverAttrs(%q) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
