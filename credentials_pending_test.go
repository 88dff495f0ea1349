package respire

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// tokenRig is a real server with the ACL user tok-1 and a client whose provider gives
// tok-N for the N of token.
type tokenRig struct {
	srv   *testserver.Server
	c     *Client
	token atomic.Int32
}

// newTokenRig starts a tokenRig at tok-1 with a client of opts (Addrs and Credentials
// set here), which has dialled once.
func newTokenRig(t *testing.T, opts Options) *tokenRig {
	t.Helper()
	g := &tokenRig{srv: testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})}
	g.token.Store(1)
	opts.Addrs = []string{g.srv.Addr()}
	opts.Credentials = func(context.Context) (Credentials, error) {
		n := int(g.token.Load())
		return Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
	g.c = newClientT(t, opts)
	if _, err := g.c.Do(context.Background(), "PING"); err != nil {
		t.Fatal(err)
	}
	return g
}

// rotateTo creates the ACL user tok-n and has the provider give it from now on.
func (g *tokenRig) rotateTo(t *testing.T, n int) testserver.User {
	t.Helper()
	u := tokUser(n)
	g.srv.Do(t, append([]string{"ACL", "SETUSER", u.Name, "on", ">" + u.Password}, u.Rules...)...)
	g.token.Store(int32(n))
	return u
}

// blpopTimeout runs BLPOP key timeout through do on a goroutine, returns once the
// server shows it blocked, and sends on the channel its error, or one for a popped
// value: the key is expected to stay empty until the timeout.
func blpopTimeout(ctx context.Context, t *testing.T, srv *testserver.Server, do func(context.Context, ...any) (resp.Value, error), key, timeout string) <-chan error {
	t.Helper()
	blpop := make(chan error, 1)
	go func() {
		v, err := do(ctx, "BLPOP", key, timeout)
		if err == nil && !v.IsNull() {
			err = errors.New("BLPOP " + key + " popped " + v.String() + ", want a timeout")
		}
		blpop <- err
	}()
	blockedClientID(t, srv)
	return blpop
}

// TestReauthenticatePendingBehindBlockingCommand rotates the credentials of a client
// whose dedicated connection is blocked in BLPOP against a real server: the AUTH for
// that connection must wait behind the BLPOP, so Reauthenticate with a deadline
// shorter than the BLPOP's timeout reports ErrReauthPending. Once the BLPOP has
// returned the connection follows on its own: no connection is left as the old user,
// and deleting that user (which would kill any connection still on it) kills none.
func TestReauthenticatePendingBehindBlockingCommand(t *testing.T) {
	const name = "pending"
	g := newTokenRig(t, Options{ClientName: name})
	srv, c := g.srv, g.c
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cn, release, err := c.Dedicated(ctx, "rot:pending")
	if err != nil {
		t.Fatal(err)
	}
	blpop := blpopTimeout(ctx, t, srv, cn.DoBlocking, "rot:pending", "1")

	next := g.rotateTo(t, 2)
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
	testkit.WaitFor(t, "every connection to be "+next.Name, func() bool {
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

// TestReauthenticateWaitsBehindOlderRotation rotates twice while a pooled BLPOP blocks
// a connection for 1.5 s against a real server: the first rotation, with 200 ms, is
// pending; the second, with 5 s, waits for the connection to finish the first one's
// AUTH and brings it to the newest user before it returns. Every connection is then
// on that user, and deleting both older users kills none.
func TestReauthenticateWaitsBehindOlderRotation(t *testing.T) {
	const name = "behind"
	g := newTokenRig(t, Options{ClientName: name})
	srv, c := g.srv, g.c
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	blpop := blpopTimeout(ctx, t, srv, c.Do, "rot:behind", "1.5")

	rotate := func(n int, d time.Duration) error {
		g.rotateTo(t, n)
		rctx, rcancel := context.WithTimeout(ctx, d)
		defer rcancel()
		return c.Reauthenticate(rctx)
	}
	if err := rotate(2, 200*time.Millisecond); !errors.Is(err, ErrReauthPending) {
		t.Errorf("first Reauthenticate with a connection blocked in BLPOP: %v, want ErrReauthPending", err)
	}
	if err := rotate(3, 5*time.Second); err != nil {
		t.Errorf("second Reauthenticate, 5 s for a BLPOP of 1.5 s: %v, want it to wait", err)
	}
	conns := clientConns(t, srv, name)
	for id, u := range conns {
		if u != tokName(3) {
			t.Errorf("as the second Reauthenticate returned, connection %s is %s, want %s", id, u, tokName(3))
		}
	}
	if err := <-blpop; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	srv.Do(t, "ACL", "DELUSER", tokName(1), tokName(2))
	after := clientConns(t, srv, name)
	for id := range conns {
		if _, ok := after[id]; !ok {
			t.Errorf("connection %s was killed by ACL DELUSER of the older users", id)
		}
	}
}
