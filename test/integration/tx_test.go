package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// TestTxRunsBlockingCommands: inside MULTI the server runs a blocking command as its
// non-blocking form, so a transaction may carry BLPOP, BRPOP and BLMOVE (issue 23,
// point 1); they used to be refused as if they could block the connection.
func TestTxRunsBlockingCommands(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		q, done := "q-"+t.Name(), "done-"+t.Name()
		srv.Do(t, "RPUSH", q, "job0", "job1", "job2")
		var res []respire.Result
		err := c.Watch(ctx, func(tx *respire.Tx) error {
			// Before MULTI a blocking command runs on the transaction's own connection.
			v, err := tx.Do(ctx, "BLPOP", q, 1)
			if err != nil || v.String() != `["`+q+`", "job0"]` {
				t.Errorf("BLPOP before Exec: %v %v", v, err)
			}
			res, err = tx.Exec(ctx,
				[]any{"BLPOP", q, 0},
				[]any{"BLMOVE", q, done, "LEFT", "RIGHT", 0},
				[]any{"BRPOP", q, 0},
				[]any{"BLPOP", q, 1},
			)
			return err
		}, "watched-"+t.Name())
		if err != nil {
			t.Fatalf("transaction of blocking commands: %v", err)
		}
		want := []string{`["` + q + `", "job1"]`, `"job2"`, "(nil)", "(nil)"}
		if len(res) != len(want) {
			t.Fatalf("%d results, want %d: %v", len(res), len(want), res)
		}
		for i, r := range res {
			if r.Err != nil || r.Value.String() != want[i] {
				t.Errorf("result %d: %v %v; want %s", i, r.Value, r.Err, want[i])
			}
		}
		if got := srv.Do(t, "LRANGE", done, "0", "-1"); got != "job2" {
			t.Errorf("BLMOVE moved %q; want job2", got)
		}
	})
}

// TestBatchRefusesBlockingCommandsSayingWhy: a blocking command in a pipeline or a
// DoMulti batch would hold up the shared connection, and the error says so rather
// than that the command changes the connection's state.
func TestBatchRefusesBlockingCommandsSayingWhy(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	_, perr := c.Pipeline().Do("SET", "k", "v").Do("BRPOP", "l", 1).Exec(ctx)
	_, merr := c.DoMulti(ctx, []any{"PING"}, []any{"BLMOVE", "a", "b", "LEFT", "LEFT", 1})
	for _, err := range []error{perr, merr} {
		switch {
		case !errors.Is(err, respire.ErrBlockingInBatch):
			t.Errorf("blocking command in a batch: %v; want ErrBlockingInBatch", err)
		case errors.Is(err, respire.ErrConnState):
			t.Errorf("blocking command in a batch: %v; it does not change the connection's state", err)
		case !strings.Contains(err.Error(), "command 1: "):
			t.Errorf("blocking command in a batch: %v; want it to name command 1", err)
		}
	}
	if got := srv.Do(t, "EXISTS", "k"); got != "0" {
		t.Errorf("a refused pipeline sent its first command")
	}
}
