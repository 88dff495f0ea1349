package coordination

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

// The standalone rows of the README's "Server compatibility" table, on the real server
// of every generation (testserver.StartGeneration; `make servers` builds the ones the
// machine cannot install): the handshake in RESP3, by default and on request, and in
// RESP2; commands one at a time, pipelined and in a transaction; a script loaded by
// EVAL after NOSCRIPT (which Valkey words differently); a lock cycle; and a fenced lock
// handed over through the waiter's tracking.
func TestServerGenerations(t *testing.T) {
	servers := map[string]struct{ name, version string }{
		testserver.Redis60:  {"redis", "6.0.16"},
		testserver.Redis7:   {"redis", ""}, // whichever the machine installed
		testserver.Redis86:  {"redis", "8.6.3"},
		testserver.Valkey81: {"valkey", "8.1.1"},
		testserver.Valkey91: {"valkey", "9.1.2"},
	}
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			want := servers[gen]
			for _, proto := range []int{0, 3, 2} {
				t.Run("Protocol"+strconv.Itoa(proto), func(t *testing.T) {
					c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto})
					cn, err := link.Of(c).Conn(context.Background(), route.SharedLane, "gen")
					if err != nil {
						t.Fatal(err)
					}
					wantProto := proto
					if proto == 0 {
						wantProto = 3
					}
					if name, version := cn.Server(); name != want.name || want.version != "" && version != want.version || cn.Protocol() != wantProto {
						t.Fatalf("connected to %q %q over RESP%d, want %s %s over RESP%d", name, version, cn.Protocol(), want.name, want.version, wantProto)
					}
					generationCommands(t, srv, c)
					generationLock(t, srv, c)
				})
			}
			t.Run("FencedLockWithTracking", func(t *testing.T) { generationFencedLock(t, srv) })
		})
	}
}

// generationCommands runs Do, a pipeline, a transaction and a script on c, checking
// each against what the server stored.
func generationCommands(t *testing.T, srv *testserver.Server, c *respire.Client) {
	t.Helper()
	ctx := context.Background()
	srv.Do(t, "DEL", "gen", "n")
	if _, err := c.Do(ctx, "SET", "gen", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "GET", "gen"); err != nil || mustText(t, v) != "v" {
		t.Fatalf("GET = %v, %v", v, err)
	}
	res, err := c.Pipeline().Do("INCR", "n").Do("INCRBY", "n", 2).Do("GET", "n").Exec(ctx)
	if err != nil || len(res) != 3 || res[2].Err != nil || mustText(t, res[2].Value) != "3" {
		t.Fatalf("pipeline: %v, %v", res, err)
	}
	err = c.Watch(ctx, func(tx *respire.Tx) error {
		v, err := tx.Do(ctx, "GET", "n")
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(mustText(t, v))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, []any{"SET", "n", n * 10}, []any{"SET", "gen", "tx"})
		return err
	}, "n")
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if got := srv.Do(t, "MGET", "n", "gen"); got != "30\ntx" {
		t.Fatalf("after the transaction the server holds %q", got)
	}
	// A flushed script cache makes EVALSHA answer NOSCRIPT, in each server's words.
	srv.Do(t, "SCRIPT", "FLUSH")
	s := respire.NewScript("return redis.call('GET', KEYS[1])")
	if v, err := s.Run(ctx, c, []string{"gen"}); err != nil || mustText(t, v) != "tx" {
		t.Fatalf("script = %v, %v", v, err)
	}
}

// generationLock acquires, renews and releases a lock through c.
func generationLock(t *testing.T, srv *testserver.Server, c *respire.Client) {
	t.Helper()
	ctx := context.Background()
	mu, err := lock.New(c).Acquire(ctx, "gen:lock", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("renewal: %v %v", ok, err)
	}
	if out, err := mu.Release(ctx); out != lock.Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
	if srv.Do(t, "EXISTS", "gen:lock") != "0" {
		t.Fatal("the lock is still there after its release")
	}
}

// generationFencedLock hands a fenced lock from a holder to a waiter with tracking:
// the waiter, its watch armed, is woken by the server's invalidation of the released
// lease (its timer would wake it only when the lease's 30 s ran out) and gets a higher
// fencing token.
func generationFencedLock(t *testing.T, srv *testserver.Server) {
	ctx := context.Background()
	holder := New(plainClient(t, srv))
	waiter := New(trackingClient(t, srv))
	const lease, fence = "{gen}:lease", "{gen}:fence"
	held, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("holder: %v %v", ok, err)
	}
	got := startWaiter(t, srv, waiter, lease, fence)
	if out, err := held.Release(ctx); out != lock.Released || err != nil {
		t.Fatalf("holder's release: %v %v", out, err)
	}
	w := <-got
	if w.fl == nil {
		t.Fatal("the waiter did not acquire")
	}
	defer w.fl.Close()
	if !w.at.Before(held.ExpiresAtEstimate()) {
		t.Fatal("the waiter was woken by its timer, not by the release's invalidation")
	}
	if w.fl.FencingToken() <= held.FencingToken() {
		t.Fatalf("fencing token %d after %d", w.fl.FencingToken(), held.FencingToken())
	}
}
