package conn

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
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

// TestReauthAfterRefusedMulti: a MULTI the server refuses opens no transaction, so a
// Reauth after it goes at once (it used to wait for an EXEC that would never come,
// until its context ended); a MULTI refused as nested leaves the outer transaction
// open, and the Reauth waits for its end.
func TestReauthAfterRefusedMulti(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{
		{Name: "u1", Password: "p1", Rules: []string{"+@all", "~*", "&*"}},
		{Name: "u2", Password: "p2", Rules: []string{"+@all", "~*", "&*"}},
		{Name: "nomulti", Password: "p3", Rules: []string{"+@all", "-multi", "~*", "&*"}},
	}})
	noMulti := Credentials{Username: "nomulti", Password: "p3"}
	tests := []struct {
		name  string
		as    Credentials
		send  func(ctx context.Context, c *Conn) error // its refusal is checked
		inTx  bool                                     // the server's transaction is open after it
		after string                                   // what ends that transaction
	}{
		{"Do MULTI refused by the ACL", noMulti, func(ctx context.Context, c *Conn) error {
			_, err := c.Do(ctx, "MULTI")
			return err
		}, false, ""},
		{"DoMulti MULTI refused by the ACL, SET", noMulti, func(ctx context.Context, c *Conn) error {
			res, err := c.DoMulti(ctx, []any{"MULTI"}, []any{"SET", "refused:a", "1"})
			if err != nil || res[1].Err != nil {
				return fmt.Errorf("batch %v %v", res, err)
			}
			return res[0].Err
		}, false, ""},
		{"DoMulti MULTI EXEC MULTI, every MULTI refused by the ACL", noMulti, func(ctx context.Context, c *Conn) error {
			res, err := c.DoMulti(ctx, []any{"MULTI"}, []any{"EXEC"}, []any{"MULTI"})
			if err != nil || res[0].Err == nil || res[1].Err == nil {
				return fmt.Errorf("batch %v %v", res, err)
			}
			return res[2].Err
		}, false, ""},
		{"Do MULTI nested", cred1, func(ctx context.Context, c *Conn) error {
			if _, err := c.Do(ctx, "MULTI"); err != nil {
				return fmt.Errorf("the outer MULTI: %w", err)
			}
			_, err := c.Do(ctx, "MULTI")
			return err
		}, true, "EXEC"},
		{"DoMulti MULTI SET MULTI nested", cred1, func(ctx context.Context, c *Conn) error {
			res, err := c.DoMulti(ctx, []any{"MULTI"}, []any{"SET", "nested:a", "1"}, []any{"MULTI"})
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				return fmt.Errorf("batch %v %v", res, err)
			}
			return res[2].Err
		}, true, "DISCARD"},
	}
	for _, proto := range protocols {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, tt.name), func(t *testing.T) {
				c := dialT(t, srv.Addr(), rotating(Options{Protocol: proto}, tt.as))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var refused *resp.ServerError
				if err := tt.send(ctx, c); !errors.As(err, &refused) {
					t.Fatalf("MULTI: %v, want refused", err)
				}
				reauth := make(chan error, 1)
				go func() { reauth <- c.Reauth(ctx, cred2) }()
				if tt.inTx {
					waitDeferredAuth(t, c)
					if _, err := c.Do(ctx, tt.after); err != nil {
						t.Fatal(err)
					}
				}
				if err := <-reauth; err != nil {
					t.Fatalf("Reauth: %v", err)
				}
				if got := serverUser(t, srv, c); got != "u2" || !c.AuthenticatedWith(cred2) {
					t.Errorf("user %q, want u2", got)
				}
			})
		}
	}
}

// TestReauthDeferredBehindRefusedMulti: a Reauth deferred while the MULTI was in
// flight goes as soon as the MULTI's refusal arrives, with nothing else to carry it.
func TestReauthDeferredBehindRefusedMulti(t *testing.T) {
	c, f := dialFakeRotating(t)
	multi := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), "MULTI"); multi <- err }()
	f.Expect("MULTI")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reauth := make(chan error, 1)
	go func() { reauth <- c.Reauth(ctx, cred2) }()
	waitDeferredAuth(t, c)
	f.Reply("-NOPERM User u1 has no permissions to run the 'multi' command\r\n")
	if err := <-multi; !resp.HasCode(err, "NOPERM") {
		t.Fatalf("MULTI: %v, want NOPERM", err)
	}
	f.Expect("AUTH", "u2", "p2")
	f.Reply("+OK\r\n")
	if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
		t.Fatalf("Reauth: %v", err)
	}
}
