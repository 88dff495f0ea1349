package conn

import (
	"context"
	"testing"
)

// TestTransactionTakenBackInAnyOrder: a MULTI and an EXEC queued by two goroutines in
// one unwritten batch and both taken back, in either order, leave the transaction as
// it was before them, so the next Reauth goes at once or waits for the end of the
// transaction still open.
func TestTransactionTakenBackInAnyOrder(t *testing.T) {
	tests := []struct {
		name  string
		open  bool      // a transaction is open before
		cmds  [2]string // queued in this order
		first int       // the one taken back first
	}{
		{"MULTI EXEC, MULTI taken back first", false, [2]string{"MULTI", "EXEC"}, 0},
		{"MULTI EXEC, EXEC taken back first", false, [2]string{"MULTI", "EXEC"}, 1},
		{"EXEC MULTI, EXEC taken back first", true, [2]string{"EXEC", "MULTI"}, 0},
		{"EXEC MULTI, MULTI taken back first", true, [2]string{"EXEC", "MULTI"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			ctx := context.Background()
			setReply := "+OK\r\n"
			if tt.open {
				openTx(t, c, f)
				setReply = "+QUEUED\r\n"
			}
			set := blockWriter(t, c)
			var takeBack [2]func()
			for i, cmd := range tt.cmds {
				takeBack[i] = queueCancellable(t, c, i, cmd, doer(cmd))
			}
			takeBack[tt.first]()
			takeBack[1-tt.first]()
			f.Expect("SET", "k", "v")
			f.Reply(setReply)
			if err := <-set; err != nil {
				t.Fatal(err)
			}
			c.mu.Lock()
			inTx := c.auth.inTx
			c.mu.Unlock()
			if inTx != tt.open {
				t.Fatalf("in a transaction: %v, want %v", inTx, tt.open)
			}
			reauth := make(chan error, 1)
			go func() { reauth <- c.Reauth(ctx, cred2) }()
			if tt.open {
				waitDeferredAuth(t, c)
				discardThenAuth(t, c, f, reauth)
				return
			}
			f.Expect("AUTH", "u2", "p2")
			f.Reply("+OK\r\n")
			if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
				t.Fatalf("Reauth: %v", err)
			}
		})
	}
}

// TestReauthDeferredBehindTakenBackMulti: a Reauth deferred behind a MULTI that is then
// taken back before it was written goes at once, without waiting for another command.
func TestReauthDeferredBehindTakenBackMulti(t *testing.T) {
	tests := []struct {
		name string
		send func(context.Context, *Conn) error
	}{
		{"Do MULTI", doer("MULTI")},
		{"DoMulti MULTI SET", func(ctx context.Context, c *Conn) error {
			_, err := c.DoMulti(ctx, []any{"MULTI"}, []any{"SET", "tx:a", "1"})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			set := blockWriter(t, c)
			takeBack := queueCancellable(t, c, 0, tt.name, tt.send)
			reauth := make(chan error, 1)
			go func() { reauth <- c.Reauth(context.Background(), cred2) }()
			waitDeferredAuth(t, c)
			takeBack()
			waitFor(t, "the AUTH queued", func() bool { q, _ := c.counts(); return q == 1 })
			f.Expect("SET", "k", "v")
			f.Reply("+OK\r\n")
			if err := <-set; err != nil {
				t.Fatal(err)
			}
			f.Expect("AUTH", "u2", "p2")
			f.Reply("+OK\r\n")
			if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
				t.Fatalf("Reauth: %v", err)
			}
		})
	}
}
