package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// readPaths are the two ways a reply is read: by the caller itself when its context
// can end (inline), and by the connection's reader goroutine when it cannot.
var readPaths = []struct {
	name string
	ctx  func(t *testing.T) context.Context
}{
	{"inline", func(t *testing.T) context.Context { return t.Context() }},
	{"reader", func(t *testing.T) context.Context { return context.WithoutCancel(t.Context()) }},
}

// TestDefaultLimitsAcceptScriptReplies: under the default limits, every reply a script
// can make is read (issue 23, point 3). A status_reply or error_reply of 70 KB, the same
// inside an array, and tables nested 65 and 100 deep failed with resp.ErrLimit and
// dropped the connection; a table nested deeper than Lua's stack allows comes back as
// 7995 arrays around the server's own error, the deepest reply a script can make.
func TestDefaultLimitsAcceptScriptReplies(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	long := strings.Repeat("x", 70000)
	nested := func(depth int, leaf resp.Value) resp.Value {
		for range depth {
			leaf = resp.Array(leaf)
		}
		return leaf
	}
	cases := []struct {
		name    string
		script  string
		want    resp.Value
		wantErr string // the server's error, for a reply that is one
	}{
		{name: "status_reply of 70 KB", script: "return redis.status_reply(string.rep('x', 70000))", want: resp.SimpleString(long)},
		{name: "error_reply of 70 KB", script: "return redis.error_reply(string.rep('x', 70000))", wantErr: "ERR " + long},
		{name: "both in an array", script: "return {1, redis.error_reply(string.rep('x', 70000)), redis.status_reply(string.rep('x', 70000))}",
			want: resp.Array(resp.Integer(1), resp.ErrorValue("ERR "+long), resp.SimpleString(long))},
		{name: "tables nested 65 deep", script: "local t = 1 for i = 1, 65 do t = {t} end return t", want: nested(65, resp.Integer(1))},
		{name: "tables nested 100 deep", script: "local t = 1 for i = 1, 100 do t = {t} end return t", want: nested(100, resp.Integer(1))},
		{name: "tables nested past Lua's stack", script: "local t = 1 for i = 1, 9000 do t = {t} end return t",
			want: nested(7995, resp.ErrorValue("ERR reached lua stack limit"))},
	}
	for _, proto := range protocols {
		c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto})
		for _, path := range readPaths {
			for _, tc := range cases {
				t.Run("RESP"+strconv.Itoa(proto)+"/"+path.name+"/"+tc.name, func(t *testing.T) {
					v, err := c.Do(path.ctx(t), "EVAL", tc.script, 0)
					if tc.wantErr != "" {
						var se *resp.ServerError
						if !errors.As(err, &se) || se.Msg != tc.wantErr {
							t.Fatalf("EVAL: %.80v, %.80v; want the server's error of %d bytes", v, err, len(tc.wantErr))
						}
					} else if err != nil || v.String() != tc.want.String() {
						t.Fatalf("EVAL: %.80v, %.80v; want %.80v", v, err, tc.want)
					}
					if err := ping(path.ctx(t), c); err != nil {
						t.Fatalf("PING after the reply: %v", err)
					}
				})
			}
		}
	}
}

// TestReplyMemoryLimit: a reply whose decoded Values would hold more than
// Limits.MaxReplyMemory fails with resp.ErrLimit and closes its connection, as other
// limits do; the client goes on with a new one (issue 23, point 4). Under the
// default limit the same reply is read.
func TestReplyMemoryLimit(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	// 100,000 small integers: under 1 MB on the wire, 8 MB of Values.
	const script = "local t = {} for i = 1, 100000 do t[i] = i end return t"
	for _, path := range readPaths {
		t.Run(path.name, func(t *testing.T) {
			small := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Limits: resp.Limits{MaxReplyMemory: 4 << 20}})
			_, err := small.Do(path.ctx(t), "EVAL", script, 0)
			if !errors.Is(err, resp.ErrLimit) {
				t.Fatalf("EVAL of 100,000 elements under a 4 MiB limit: %v; want resp.ErrLimit", err)
			}
			if err := ping(path.ctx(t), small); err != nil {
				t.Fatalf("PING after the refused reply: %v", err)
			}
			v, err := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}}).Do(path.ctx(t), "EVAL", script, 0)
			if err != nil || v.Len() != 100000 {
				t.Fatalf("EVAL of 100,000 elements under the default limit: %d elements, %v", v.Len(), err)
			}
		})
	}
}
