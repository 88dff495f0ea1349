package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
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
			testkit.WaitFor(t, "the AUTH queued", func() bool { q, _ := c.counts(); return q == 1 })
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

// TestReauthQueuedBehindTakenBackExec: a Reauth that found no transaction only because
// an EXEC ahead of it was still queued goes straight into the queue, not through the
// deferral; when the EXEC is taken back the AUTH would land inside the transaction, so
// it is taken back too and deferred again, whether its caller waits without a context
// or with one the watcher follows. (Behind a DISCARD a Reauth is deferred until the
// DISCARD is accepted: TestReauthBehindRefusedDiscard.)
func TestReauthQueuedBehindTakenBackExec(t *testing.T) {
	tests := []struct {
		name  string
		close string
		ctx   func(t *testing.T) context.Context
	}{
		{"EXEC, no deadline", "EXEC", func(*testing.T) context.Context { return context.Background() }},
		{"EXEC, deadline", "EXEC", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			t.Cleanup(cancel)
			return ctx
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			openTx(t, c, f)
			set := blockWriter(t, c)
			takeBack := queueCancellable(t, c, 0, tt.close, doer(tt.close))
			ctx := tt.ctx(t)
			reauth := make(chan error, 1)
			go func() { reauth <- c.Reauth(ctx, cred2) }()
			testkit.WaitFor(t, "the AUTH queued behind "+tt.close, func() bool { q, _ := c.counts(); return q == 2 })
			takeBack()
			redeferredThenAuth(t, c, f, set, reauth)
		})
	}
}

// TestReauthsBehindTakenBackExec: with [EXEC, AUTH as u2, MULTI, EXEC, AUTH as u3]
// queued, both AUTHs deferred and released behind their EXEC, the first EXEC taken back puts the first AUTH inside the transaction (the
// MULTI after it is then refused as nested, and the second EXEC ends the outer
// transaction); that AUTH is taken back, and superseded by the later one rather than
// deferred behind it, so the connection ends up as u3 and no EXEC carries an AUTH's
// reply.
func TestReauthsBehindTakenBackExec(t *testing.T) {
	cred3 := Credentials{Username: "u3", Password: "p3"}
	c, f := dialFakeRotating(t)
	ctx := context.Background()
	openTx(t, c, f)
	set := blockWriter(t, c)
	first := make(chan error, 1)
	go func() { first <- c.Reauth(ctx, cred2) }()
	waitDeferredAuth(t, c)
	takeBack := queueCancellable(t, c, 0, "EXEC", doer("EXEC"))
	testkit.WaitFor(t, "the AUTH released behind EXEC", func() bool { q, _ := c.counts(); return q == 2 })
	multi, exec := make(chan error, 1), make(chan resp.Value, 1)
	go func() { _, err := c.Do(ctx, "MULTI"); multi <- err }()
	testkit.WaitFor(t, "MULTI queued", func() bool { q, _ := c.counts(); return q == 3 })
	second := make(chan error, 1)
	go func() { second <- c.Reauth(ctx, cred3) }()
	waitDeferredAuth(t, c)
	go func() { v, _ := c.Do(ctx, "EXEC"); exec <- v }()
	testkit.WaitFor(t, "EXEC and the second AUTH queued", func() bool { q, _ := c.counts(); return q == 5 })
	takeBack()
	if err := <-first; !errors.Is(err, errReauthSuperseded) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("first Reauth: %v, want superseded, not sent", err)
	}
	f.Expect("SET", "k", "v")
	f.Expect("MULTI")
	f.Expect("EXEC")
	f.Expect("AUTH", "u3", "p3")
	f.Reply("+QUEUED\r\n-ERR MULTI calls can not be nested\r\n*1\r\n+OK\r\n+OK\r\n")
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	if err := <-multi; !resp.HasCode(err, "ERR") {
		t.Fatalf("nested MULTI: %v, want refused", err)
	}
	if v := <-exec; v.Len() != 1 {
		t.Fatalf("EXEC: %v, want the SET's reply alone", v)
	}
	if err := <-second; err != nil || !c.AuthenticatedWith(cred3) {
		t.Fatalf("second Reauth: %v", err)
	}
}

// redeferredThenAuth checks that the Reauth whose result comes on reauth, its AUTH
// taken back from inside the open transaction, is deferred again with nothing left
// queued; it answers the SET in flight (blockWriter's set) as queued in the
// transaction, then ends it (discardThenAuth).
func redeferredThenAuth(t *testing.T, c *Conn, f *fakeServer, set, reauth chan error) {
	t.Helper()
	waitDeferredAuth(t, c)
	if q, _ := c.counts(); q != 0 {
		t.Fatalf("%d requests still queued, want none", q)
	}
	f.Expect("SET", "k", "v")
	f.Reply("+QUEUED\r\n")
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	discardThenAuth(t, c, f, reauth)
}

// TestReauthNeverInTransactionRandomized: goroutines sharing a connection to a real
// server send MULTI, EXEC, DISCARD, MULTI-SET-EXEC batches and SETs with deadlines of
// 0 to 40 µs, so that many are taken back before they are written, while Reauth
// switches the credentials back and forth: no AUTH ever lands inside a transaction
// (errAuthQueued, which closes the connection), and the connection ends up
// authenticated as the last Reauth says. Three rounds under `make test`, twenty with
// RESPIRE_SOAK=1.
func TestReauthNeverInTransactionRandomized(t *testing.T) {
	srv := twoUsers(t)
	rounds := 3
	if os.Getenv("RESPIRE_SOAK") == "1" {
		rounds = 20
	}
	for round := range rounds {
		proto := protocols[round%len(protocols)]
		c := dialT(t, srv.Addr(), rotating(Options{Protocol: proto}, cred1))
		var (
			stop    atomic.Bool
			notSent atomic.Int64
			queued  = make(chan error, 7)
			wg      sync.WaitGroup
		)
		check := func(err error) {
			if errors.Is(err, errAuthQueued) {
				select {
				case queued <- err:
				default:
				}
			}
			if errors.Is(err, ErrNotSent) {
				notSent.Add(1)
			}
		}
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for !stop.Load() && c.Err() == nil {
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(41))*time.Microsecond)
					var err error
					switch rng.IntN(5) {
					case 0:
						_, err = c.Do(ctx, "MULTI")
					case 1:
						_, err = c.Do(ctx, "EXEC")
					case 2:
						_, err = c.Do(ctx, "DISCARD")
					case 3:
						_, err = c.DoMulti(ctx, []any{"MULTI"}, []any{"SET", "fuzz:b", "1"}, []any{"EXEC"})
					default:
						_, err = c.Do(ctx, "SET", "fuzz:a", "1")
					}
					cancel()
					check(err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && c.Err() == nil; i++ {
				cr := []Credentials{cred2, cred1}[i%2]
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				err := c.Reauth(ctx, cr)
				cancel()
				check(err)
			}
		}()
		time.Sleep(700 * time.Millisecond) // the round's length, not a synchronisation
		stop.Store(true)
		wg.Wait()
		select {
		case err := <-queued:
			t.Fatalf("round %d (RESP%d): %v", round, proto, err)
		default:
		}
		if err := c.Err(); err != nil {
			t.Fatalf("round %d (RESP%d): the connection closed: %v", round, proto, err)
		}
		if notSent.Load() == 0 {
			t.Fatalf("round %d (RESP%d): no request given up before it was written", round, proto)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.Do(ctx, "DISCARD") // ends the transaction the round may have left open
		last := cred2        // whichever the connection is not on, so that an AUTH goes
		if c.AuthenticatedWith(cred2) {
			last = cred1
		}
		if err := c.Reauth(ctx, last); err != nil {
			t.Fatalf("round %d (RESP%d): the last Reauth: %v", round, proto, err)
		}
		cancel()
		if got := serverUser(t, srv, c); got != last.Username || !c.AuthenticatedWith(last) {
			t.Fatalf("round %d (RESP%d): user %q, want %q", round, proto, got, last.Username)
		}
		t.Logf("round %d (RESP%d): %d requests not sent", round, proto, notSent.Load())
		c.Close()
	}
}

// TestReauthBehindRefusedDiscard: a DISCARD the server refuses (the ACL) leaves the
// transaction open, so a deferred Reauth is not queued behind it but waits for the
// DISCARD's reply, and on a refusal for the transaction's real end.
func TestReauthBehindRefusedDiscard(t *testing.T) {
	c, f, reauth := deferredReauth(t)
	ctx := context.Background()
	discard := make(chan error, 1)
	go func() { _, err := c.Do(ctx, "DISCARD"); discard <- err }()
	f.Expect("DISCARD")
	waitDeferredAuth(t, c) // not queued behind the DISCARD, nor written
	f.Reply("-NOPERM User u1 has no permissions to run the 'discard' command\r\n")
	if err := <-discard; !resp.HasCode(err, "NOPERM") {
		t.Fatalf("DISCARD: %v, want NOPERM", err)
	}
	waitDeferredAuth(t, c)
	exec := make(chan error, 1)
	go func() { _, err := c.Do(ctx, "EXEC"); exec <- err }()
	f.Expect("EXEC")
	f.Expect("AUTH", "u2", "p2")
	f.Reply("*0\r\n+OK\r\n")
	if err := <-exec; err != nil {
		t.Fatal(err)
	}
	if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
		t.Fatalf("Reauth: %v", err)
	}
}

// TestReauthAfterRefusedDiscard is TestReauthBehindRefusedDiscard against a real server,
// with a user that may not DISCARD, in a single request and in a batch: the server's
// transaction stays open, and the Reauth goes behind the EXEC that ends it.
func TestReauthAfterRefusedDiscard(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{
		{Name: "nodiscard", Password: "p3", Rules: []string{"+@all", "-discard", "~*", "&*"}},
		{Name: "u2", Password: "p2", Rules: []string{"+@all", "~*", "&*"}},
	}})
	noDiscard := Credentials{Username: "nodiscard", Password: "p3"}
	tests := []struct {
		name string
		send func(ctx context.Context, c *Conn) error // the DISCARD's refusal is returned
	}{
		{"Do MULTI, Do DISCARD", func(ctx context.Context, c *Conn) error {
			if _, err := c.Do(ctx, "MULTI"); err != nil {
				return fmt.Errorf("MULTI: %w", err)
			}
			_, err := c.Do(ctx, "DISCARD")
			return err
		}},
		{"DoMulti MULTI SET DISCARD", func(ctx context.Context, c *Conn) error {
			res, err := c.DoMulti(ctx, []any{"MULTI"}, []any{"SET", "nodiscard:a", "1"}, []any{"DISCARD"})
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				return fmt.Errorf("batch %v %v", res, err)
			}
			return res[2].Err
		}},
	}
	for _, proto := range protocols {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, tt.name), func(t *testing.T) {
				c := dialT(t, srv.Addr(), rotating(Options{Protocol: proto}, noDiscard))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := tt.send(ctx, c); !resp.HasCode(err, "NOPERM") {
					t.Fatalf("DISCARD: %v, want NOPERM", err)
				}
				reauth := make(chan error, 1)
				go func() { reauth <- c.Reauth(ctx, cred2) }()
				waitDeferredAuth(t, c)
				if _, err := c.Do(ctx, "EXEC"); !resp.HasCode(err, "EXECABORT") {
					t.Fatalf("EXEC: %v, want EXECABORT (the refused DISCARD marked the transaction)", err)
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

// TestSettleTx: what a request does to the transaction, from its commands and which
// of them the server refused ("!" before a name).
func TestSettleTx(t *testing.T) {
	tests := []struct {
		cmds []string
		want txEffect
	}{
		{[]string{"DISCARD"}, txCloses},
		{[]string{"!DISCARD"}, txKeeps},
		{[]string{"MULTI"}, txOpens},
		{[]string{"!MULTI"}, txKeeps},
		{[]string{"EXEC", "!MULTI"}, txCloses},
		{[]string{"!EXEC"}, txCloses},
		{[]string{"MULTI", "SET", "DISCARD"}, txCloses},
		{[]string{"MULTI", "SET", "!DISCARD"}, txOpens},
		{[]string{"!MULTI", "SET", "!DISCARD"}, txKeeps},
		{[]string{"EXEC", "!DISCARD"}, txCloses},
		{[]string{"MULTI", "DISCARD", "MULTI"}, txOpens},
		{[]string{"MULTI", "DISCARD", "!MULTI"}, txCloses},
		{[]string{"MULTI", "!DISCARD", "!MULTI"}, txOpens},
		{[]string{"!DISCARD", "!MULTI", "!DISCARD"}, txKeeps},
		// A DISCARD refused behind an accepted one: the first closed the transaction.
		{[]string{"MULTI", "DISCARD", "!DISCARD"}, txCloses},
		{[]string{"DISCARD", "!DISCARD"}, txCloses},
		{[]string{"MULTI", "SET", "DISCARD", "!DISCARD"}, txCloses},
		{[]string{"MULTI", "!DISCARD", "!DISCARD"}, txOpens},
		{[]string{"MULTI", "!MULTI", "!DISCARD", "MULTI", "!DISCARD"}, txOpens},
		{[]string{"MULTI", "EXEC", "!MULTI", "!DISCARD"}, txCloses},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.cmds), func(t *testing.T) {
			c := &Conn{}
			cl := &call{want: len(tt.cmds), results: make([]Result, 0, len(tt.cmds))}
			for i, cmd := range tt.cmds {
				name, refused := strings.CutPrefix(cmd, "!")
				c.followLocked(cl, i, verbOf([]any{name}))
				res := Result{Value: resp.SimpleString("OK")}
				if refused {
					res = ResultOf(resp.ErrorValue("ERR refused"))
				}
				cl.results = append(cl.results, res)
			}
			cl.settleTx()
			if got := cl.effect(); got != tt.want {
				t.Errorf("effect %d, want %d", got, tt.want)
			}
		})
	}
}

// deferredReauth dials the fake server, opens a transaction and has a Reauth to cred2
// deferred in it; its result comes on reauth.
func deferredReauth(t *testing.T) (c *Conn, f *fakeServer, reauth chan error) {
	t.Helper()
	c, f = dialFakeRotating(t)
	openTx(t, c, f)
	reauth = make(chan error, 1)
	go func() { reauth <- c.Reauth(context.Background(), cred2) }()
	waitDeferredAuth(t, c)
	return c, f, reauth
}
