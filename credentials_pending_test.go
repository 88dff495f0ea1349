package respire

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/test/testserver"
)

// TestReauthenticatePendingBehindBlockingCommand rotates the credentials of a client
// whose dedicated connection is blocked in BLPOP against a real server: the AUTH for
// that connection must wait behind the BLPOP, so Reauthenticate with a deadline
// shorter than the BLPOP's timeout reports ErrReauthPending. Once the BLPOP has
// returned the connection follows on its own: no connection is left as the old user,
// and deleting that user (which would kill any connection still on it) kills none.
func TestReauthenticatePendingBehindBlockingCommand(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})
	var token atomic.Int32
	token.Store(1)
	provider := func(context.Context) (Credentials, error) {
		n := int(token.Load())
		return Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
	const name = "pending"
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Credentials: provider, ClientName: name})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}

	cn, release, err := c.Dedicated(ctx, "rot:pending")
	if err != nil {
		t.Fatal(err)
	}
	blpop := make(chan error, 1)
	go func() {
		v, err := cn.DoBlocking(ctx, "BLPOP", "rot:pending", "1")
		if err == nil && !v.IsNull() {
			err = errors.New("BLPOP rot:pending popped " + v.String() + ", want a timeout")
		}
		blpop <- err
	}()
	blockedClientID(t, srv)

	next := tokUser(2)
	srv.Do(t, append([]string{"ACL", "SETUSER", next.Name, "on", ">" + next.Password}, next.Rules...)...)
	token.Store(2)
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = c.Reauthenticate(rctx)
	rcancel()
	if !errors.Is(err, ErrReauthPending) {
		t.Errorf("Reauthenticate with a connection blocked in BLPOP: %v, want ErrReauthPending", err)
	}

	if err := <-blpop; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	var conns map[string]string
	waitFor(t, "every connection to be "+next.Name, func() bool {
		conns = clientConns(t, srv, name)
		for _, u := range conns {
			if u != next.Name {
				return false
			}
		}
		return len(conns) > 0
	})
	srv.Do(t, "ACL", "DELUSER", tokName(1))
	after := clientConns(t, srv, name)
	for id := range conns {
		if _, ok := after[id]; !ok {
			t.Errorf("connection %s was killed by ACL DELUSER %s", id, tokName(1))
		}
	}
	v, err := cn.Do(ctx, "ACL", "WHOAMI")
	if who, _ := v.Text(); err != nil || who != next.Name {
		t.Errorf("ACL WHOAMI on the dedicated connection: %s %v, want %s", v, err, next.Name)
	}
	release(true)
}
