package respire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// recorder is an Observer that keeps the events the tests look at.
type recorder struct {
	observe.Base
	mu      sync.Mutex
	starts  []observe.CommandStart
	ends    []observe.CommandEnd
	batches []observe.BatchEnd
	bstarts int
	caches  []observe.Cache
	waits   []observe.PoolWait
}

func (r *recorder) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, e)
	return ctx
}

func (r *recorder) CommandEnd(_ context.Context, e observe.CommandEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends = append(r.ends, e)
}

func (r *recorder) BatchStart(ctx context.Context, _ observe.BatchStart) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bstarts++
	return ctx
}

func (r *recorder) BatchEnd(_ context.Context, e observe.BatchEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, e)
}

func (r *recorder) Cache(e observe.Cache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caches = append(r.caches, e)
}

func (r *recorder) PoolWait(e observe.PoolWait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, e)
}

// lastEnd returns the last CommandEnd, and checks that every command that started
// ended, with the same name.
func (r *recorder) lastEnd(t *testing.T) observe.CommandEnd {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ends) == 0 || len(r.starts) != len(r.ends) {
		t.Fatalf("%d CommandStart and %d CommandEnd events", len(r.starts), len(r.ends))
	}
	e := r.ends[len(r.ends)-1]
	if s := r.starts[len(r.starts)-1]; s.Name != e.Name || !s.Start.Equal(e.Start) {
		t.Errorf("CommandStart %+v does not match CommandEnd %+v", s, e)
	}
	return e
}

func (r *recorder) lastBatch(t *testing.T) observe.BatchEnd {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.batches) == 0 || r.bstarts != len(r.batches) {
		t.Fatalf("%d BatchStart and %d BatchEnd events", r.bstarts, len(r.batches))
	}
	return r.batches[len(r.batches)-1]
}

func (r *recorder) cacheKinds() []observe.CacheKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]observe.CacheKind, len(r.caches))
	for i, e := range r.caches {
		kinds[i] = e.Kind
	}
	return kinds
}

// cacheEvent returns the first cache event of kind, if there is one.
func (r *recorder) cacheEvent(kind observe.CacheKind) (observe.Cache, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.caches {
		if e.Kind == kind {
			return e, true
		}
	}
	return observe.Cache{}, false
}

// Each Do is one CommandStart and one CommandEnd, named by the command table in upper
// case, with the server's address and the outcome class of its error.
// A command refused because the key prefix cannot confine it was not sent; a command
// starts with the address of the server it is about to go to.
func TestObserverNotConfinedAndStartAddr(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec, KeyPrefix: "t:"})
	ctx := context.Background()
	if _, err := c.Do(ctx, "RANDOMKEY"); !errors.Is(err, ErrNotConfined) {
		t.Fatalf("RANDOMKEY under a prefix: %v", err)
	}
	if e := rec.lastEnd(t); e.Outcome != observe.NotSent || e.Addr != "" {
		t.Errorf("CommandEnd %+v, want not sent, no address", e)
	}
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	start := rec.starts[len(rec.starts)-1]
	rec.mu.Unlock()
	if start.Name != "GET" || start.Addr != srv.Addr() {
		t.Errorf("CommandStart %+v, want GET for %s", start, srv.Addr())
	}
}

func TestObserverCommands(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	srv.Do(t, "LPUSH", "obs:list", "x", "y") // BLPOP pops one; WRONGTYPE needs the rest
	cases := []struct {
		name     string
		args     []any
		wantName string
		want     observe.Outcome
	}{
		{"set", []any{"set", "obs:k", "v"}, "SET", observe.OK},
		{"get", []any{"GET", "obs:k"}, "GET", observe.OK},
		{"null reply", []any{"GET", "obs:missing"}, "GET", observe.OK},
		{"bytes name", []any{[]byte("Get"), "obs:k"}, "GET", observe.OK},
		{"subcommand", []any{"CLIENT", "ID"}, "CLIENT", observe.OK},
		{"blocking, on a dedicated connection", []any{"BLPOP", "obs:list", 1}, "BLPOP", observe.OK},
		{"wrongtype", []any{"GET", "obs:list"}, "GET", observe.ServerError},
		{"unknown command", []any{"NoSuchCommand", "x"}, "NoSuchCommand", observe.ServerError},
		{"empty key list", []any{"GET"}, "GET", observe.ServerError},
		{"connection state", []any{"SELECT", "1"}, "SELECT", observe.NotSent},
		{"invalid argument", []any{"SET", "obs:k", struct{}{}}, "SET", observe.NotSent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Do(ctx, tc.args...)
			e := rec.lastEnd(t)
			if e.Name != tc.wantName || e.Outcome != tc.want {
				t.Errorf("CommandEnd %s, %v; want %s, %v (err %v)", e.Name, e.Outcome, tc.wantName, tc.want, err)
			}
			if e.Err != err {
				t.Errorf("CommandEnd.Err %v, Do returned %v", e.Err, err)
			}
			wantAddr := srv.Addr()
			if tc.want == observe.NotSent {
				wantAddr = ""
			}
			if e.Addr != wantAddr {
				t.Errorf("CommandEnd.Addr %q, want %q", e.Addr, wantAddr)
			}
			if e.Duration <= 0 || e.Start.IsZero() {
				t.Errorf("CommandEnd Start %v, Duration %v", e.Start, e.Duration)
			}
			if tc.want == observe.ServerError && !errors.As(err, new(*resp.ServerError)) {
				t.Errorf("ServerError outcome for %v", err)
			}
		})
	}
}

// A command that cannot have reached the server is NotSent; one whose connection
// broke after it was written is Unknown.
func TestObserverCommandOutcomes(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	t.Run("context ended first", func(t *testing.T) {
		rec := &recorder{}
		c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Do(ctx, "SET", "obs:k", "v")
		if e := rec.lastEnd(t); e.Outcome != observe.NotSent || e.Name != "SET" {
			t.Errorf("cancelled Do: CommandEnd %s %v (err %v), want SET not_sent", e.Name, e.Outcome, err)
		}
	})
	t.Run("client closed", func(t *testing.T) {
		rec := &recorder{}
		c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
		c.Close()
		_, err := c.Do(context.Background(), "GET", "obs:k")
		if e := rec.lastEnd(t); e.Outcome != observe.NotSent || !errors.Is(e.Err, ErrClosed) {
			t.Errorf("Do on a closed client: CommandEnd %v, %v (err %v), want not_sent, ErrClosed", e.Outcome, e.Err, err)
		}
	})
	t.Run("connection killed mid-command", func(t *testing.T) {
		rec := &recorder{}
		c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
		done := make(chan error, 1)
		go func() {
			_, err := c.Do(context.Background(), "BLPOP", "obs:never", 0)
			done <- err
		}()
		id := blockedClientID(t, srv)
		srv.Do(t, "CLIENT", "KILL", "ID", id)
		err := <-done
		if !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("BLPOP on a killed connection: %v, want ErrOutcomeUnknown", err)
		}
		if e := rec.lastEnd(t); e.Outcome != observe.Unknown || e.Name != "BLPOP" {
			t.Errorf("killed BLPOP: CommandEnd %s %v, want BLPOP unknown", e.Name, e.Outcome)
		}
	})
}

// blockedClientID waits for a connection of srv blocked in BLPOP and returns its id.
func blockedClientID(t *testing.T, srv *testserver.Server) string {
	t.Helper()
	var id string
	eventually(t, "a connection blocked in BLPOP", func() bool {
		for _, line := range strings.Split(srv.Do(t, "CLIENT", "LIST"), "\n") {
			if strings.Contains(line, " cmd=blpop ") {
				for _, f := range strings.Fields(line) {
					if v, ok := strings.CutPrefix(f, "id="); ok {
						id = v
						return true
					}
				}
			}
		}
		return false
	})
	return id
}

// DoMulti, Pipeline.Exec and a transaction are each one batch, with the count of their
// error replies.
func TestObserverBatches(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	srv.Do(t, "LPUSH", "obs:list", "x")
	cmds := [][]any{{"SET", "obs:a", "1"}, {"GET", "obs:list"}, {"INCR", "obs:list"}, {"GET", "obs:a"}}
	cases := []struct {
		kind observe.BatchKind
		run  func() ([]Result, error)
	}{
		{observe.Multi, func() ([]Result, error) { return c.DoMulti(ctx, cmds...) }},
		{observe.Pipeline, func() ([]Result, error) {
			p := c.Pipeline()
			for _, args := range cmds {
				p.Do(args...)
			}
			return p.Exec(ctx)
		}},
		{observe.Transaction, func() (res []Result, err error) {
			err = c.Watch(ctx, func(tx *Tx) error {
				res, err = tx.Exec(ctx, cmds...)
				return err
			}, "obs:a")
			return res, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			res, err := tc.run()
			if err != nil || len(res) != len(cmds) {
				t.Fatalf("%d results, %v", len(res), err)
			}
			e := rec.lastBatch(t)
			want := observe.BatchEnd{Kind: tc.kind, Len: len(cmds), Addr: srv.Addr(), Outcome: observe.OK, Failed: 2}
			got := e
			got.Start, got.Duration = time.Time{}, 0
			if got != want {
				t.Errorf("BatchEnd %+v, want %+v", got, want)
			}
			if e.Duration <= 0 {
				t.Errorf("BatchEnd.Duration %v", e.Duration)
			}
		})
	}
	t.Run("watched key changed", func(t *testing.T) {
		err := c.Watch(ctx, func(tx *Tx) error {
			srv.Do(t, "SET", "obs:a", "changed")
			_, err := tx.Exec(ctx, []any{"SET", "obs:a", "mine"})
			return err
		}, "obs:a")
		if e := rec.lastBatch(t); !errors.Is(err, ErrTxFailed) || e.Outcome != observe.ServerError || e.Err != err {
			t.Errorf("BatchEnd %+v for a transaction that failed with %v, want server_error", e, err)
		}
	})
	t.Run("refused batch", func(t *testing.T) {
		_, err := c.DoMulti(ctx, []any{"GET", "obs:a"}, []any{"BLPOP", "obs:a", 0})
		if e := rec.lastBatch(t); e.Outcome != observe.NotSent || e.Err != err || e.Addr != "" {
			t.Errorf("BatchEnd %+v for a batch refused with %v, want not_sent, no address", e, err)
		}
	})
	// A batch that is an ordinary one of the client sends no command events.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ends) != 0 {
		t.Errorf("%d CommandEnd events for batches", len(rec.ends))
	}
}

// DoCached reports a miss (with its command's events) or a hit, and the cache reports
// invalidations, flushes and the loss of its tracking connection with its server.
func TestObserverCache(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := cachedClientT(t, srv, Options{Observer: rec})
	srv.Do(t, "SET", "obs:c", "v")
	cachedText(t, c, time.Hour, "GET", "obs:c")
	cachedText(t, c, time.Hour, "GET", "obs:c")
	if got, want := fmt.Sprint(rec.cacheKinds()), fmt.Sprint([]observe.CacheKind{observe.CacheMiss, observe.CacheHit}); got != want {
		t.Fatalf("cache events %s, want %s", got, want)
	}
	if e := rec.lastEnd(t); e.Name != "GET" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
		t.Errorf("the miss's CommandEnd %+v", e)
	}

	srv.Do(t, "SET", "obs:c", "w")
	eventually(t, "the invalidation event", func() bool {
		_, ok := rec.cacheEvent(observe.CacheInvalidate)
		return ok
	})
	if e, _ := rec.cacheEvent(observe.CacheInvalidate); e.Keys != 1 || e.Addr != srv.Addr() {
		t.Errorf("CacheInvalidate %+v, want 1 key from %s", e, srv.Addr())
	}

	cachedText(t, c, time.Hour, "GET", "obs:c")
	srv.Do(t, "FLUSHALL")
	eventually(t, "the flush event", func() bool {
		_, ok := rec.cacheEvent(observe.CacheFlush)
		return ok
	})
	if e, _ := rec.cacheEvent(observe.CacheFlush); e.Keys != 0 || e.Addr != srv.Addr() {
		t.Errorf("CacheFlush %+v, want from %s", e, srv.Addr())
	}

	if killTracked(t, srv) == 0 {
		t.Fatal("no tracking connection to kill")
	}
	eventually(t, "the tracking-lost event", func() bool {
		_, ok := rec.cacheEvent(observe.CacheTrackingLost)
		return ok
	})
	if e, _ := rec.cacheEvent(observe.CacheTrackingLost); e.Addr != srv.Addr() {
		t.Errorf("CacheTrackingLost %+v, want from %s", e, srv.Addr())
	}
}

// The link's Do, on either lane, the call of packages built on the client, is a
// command too.
func TestObserverDoOn(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	shared, err := c.link.Conn(ctx, route.SharedLane, "obs:k")
	if err != nil {
		t.Fatal(err)
	}
	locks, err := c.link.Conn(ctx, route.LockLane, "obs:k")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"DoOn", func() error {
			_, _, err := c.link.Do(ctx, shared, route.SharedLane, conn.CallOptions{}, "SET", "obs:k", "v")
			return err
		}},
		{"LockDoOn", func() error {
			_, _, err := c.link.Do(ctx, locks, route.LockLane, conn.CallOptions{}, "SET", "obs:k", "w")
			return err
		}},
	} {
		if err := tc.do(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if e := rec.lastEnd(t); e.Name != "SET" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
			t.Errorf("%s: CommandEnd %+v", tc.name, e)
		}
	}
}

// On a Cluster a command's address is the node that answered, after a redirection,
// and a batch split across nodes has none.
func TestObserverCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := clusterTestContext(t)
	rec := &recorder{}
	c := clusterClient(t, cl, Options{Observer: rec})
	const slot = 4242
	key := keyIn(slot, "obs")
	if _, err := c.Do(ctx, "SET", key, "v"); err != nil {
		t.Fatal(err)
	}
	src := cl.MasterOf(t, slot)
	if e := rec.lastEnd(t); e.Addr != src.Addr() {
		t.Errorf("SET answered by %s, CommandEnd.Addr %q", src.Addr(), e.Addr)
	}
	var dst *clusterserver.Node
	for _, m := range cl.Masters(t) {
		if m.ID != src.ID {
			dst = m
			break
		}
	}
	mig := cl.BeginMigration(t, slot, dst)
	mig.MoveKeys(t, key)
	if _, err := c.Do(ctx, "GET", key); err != nil {
		t.Fatal(err)
	}
	if e := rec.lastEnd(t); e.Addr != dst.Addr() || e.Outcome != observe.OK {
		t.Errorf("GET asked to %s: CommandEnd %+v", dst.Addr(), e)
	}
	mig.Finish(t)

	spread := [][]any{{"GET", keyIn(0, "obs")}, {"GET", keyIn(cluster.SlotCount-1, "obs")}}
	if _, err := c.DoMulti(ctx, spread...); err != nil {
		t.Fatal(err)
	}
	if e := rec.lastBatch(t); e.Addr != "" || e.Outcome != observe.OK || e.Len != 2 {
		t.Errorf("batch split across nodes: BatchEnd %+v", e)
	}
}
