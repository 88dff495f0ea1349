package respire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// clusterClient connects to c with opts (Addrs and Cluster set here).
func clusterClient(t *testing.T, c *clusterserver.Cluster, opts Options) *Client {
	t.Helper()
	opts.Addrs = c.Seeds()[:2]
	opts.Cluster = true
	return newClientT(t, opts)
}

// clusterTestContext is the context of a Cluster test: its deadline makes a
// redirection loop or a stuck refresh fail the test instead of hanging the suite.
func clusterTestContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

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
	testkit.WaitFor(t, "a connection blocked in BLPOP", func() bool {
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
	testkit.WaitFor(t, "the invalidation event", func() bool {
		_, ok := rec.cacheEvent(observe.CacheInvalidate)
		return ok
	})
	if e, _ := rec.cacheEvent(observe.CacheInvalidate); e.Keys != 1 || e.Addr != srv.Addr() {
		t.Errorf("CacheInvalidate %+v, want 1 key from %s", e, srv.Addr())
	}

	cachedText(t, c, time.Hour, "GET", "obs:c")
	srv.Do(t, "FLUSHALL")
	testkit.WaitFor(t, "the flush event", func() bool {
		_, ok := rec.cacheEvent(observe.CacheFlush)
		return ok
	})
	if e, _ := rec.cacheEvent(observe.CacheFlush); e.Keys != 0 || e.Addr != srv.Addr() {
		t.Errorf("CacheFlush %+v, want from %s", e, srv.Addr())
	}

	if killTracked(t, srv) == 0 {
		t.Fatal("no tracking connection to kill")
	}
	testkit.WaitFor(t, "the tracking-lost event", func() bool {
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
	key := clusterserver.KeyIn(slot, "obs")
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

	spread := [][]any{{"GET", clusterserver.KeyIn(0, "obs")}, {"GET", clusterserver.KeyIn(cluster.SlotCount-1, "obs")}}
	if _, err := c.DoMulti(ctx, spread...); err != nil {
		t.Fatal(err)
	}
	if e := rec.lastBatch(t); e.Addr != "" || e.Outcome != observe.OK || e.Len != 2 {
		t.Errorf("batch split across nodes: BatchEnd %+v", e)
	}
}

func TestOutcomeOf(t *testing.T) {
	wrongType := resp.NewServerError("WRONGTYPE Operation against a key holding the wrong kind of value")
	cases := []struct {
		name string
		err  error
		want observe.Outcome
	}{
		{"nil", nil, observe.OK},
		{"error reply", wrongType, observe.ServerError},
		{"wrapped error reply", fmt.Errorf("command 2: %w", wrongType), observe.ServerError},
		{"too many redirects", fmt.Errorf("%w: %w", ErrTooManyRedirects, resp.NewServerError("MOVED 1 a:1")), observe.ServerError},
		{"watched key changed", ErrTxFailed, observe.ServerError},
		{"queued, context ended", &conn.CallError{Err: context.Canceled}, observe.NotSent},
		{"written, context ended", &conn.CallError{Written: true, Err: context.Canceled}, observe.Unknown},
		{"written, connection lost", &conn.CallError{Written: true, Err: io.EOF}, observe.Unknown},
		{"written, closed", &conn.CallError{Written: true, Err: conn.ErrClosed}, observe.Unknown},
		{"context ended before", context.DeadlineExceeded, observe.NotSent},
		{"client closed", ErrClosed, observe.NotSent},
		{"invalid argument", fmt.Errorf("%w: bad", resp.ErrInvalidArg), observe.NotSent},
		{"empty command", resp.ErrEmptyCommand, observe.NotSent},
		{"cross slot", ErrCrossSlot, observe.NotSent},
		{"credentials", fmt.Errorf("%w: expired", conn.ErrCredentials), observe.NotSent},
		{"unclassified", errors.New("something else"), observe.Unknown},
	}
	for _, tc := range cases {
		if got := outcomeOf(tc.err); got != tc.want {
			t.Errorf("%s: outcomeOf(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// noopObserver is an Observer that does nothing: what the client itself costs when it
// reports events.
type noopObserver struct{ observe.Base }

// An observer adds no allocation to a command or a batch: the events are built on the
// stack, named from the command table, and passed by value.
func TestObserverAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: &noopObserver{}, ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	// Not constants: their conversions to any would allocate if an event kept them.
	key, val := strings.Repeat("k", 10), strings.Repeat("v", 1024)
	if _, err := c.Do(ctx, "SET", key, val); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DoCached(ctx, time.Minute, "GET", key); err != nil {
		t.Fatal(err)
	}
	cmds := make([][]any, 100)
	for i := range cmds {
		cmds[i] = []any{"GET", key}
	}
	p := c.Pipeline()
	cases := []struct {
		name string
		max  float64 // the budget without an observer (alloc_test.go)
		fn   func()
	}{
		{"SET", 0, func() { c.Do(ctx, "SET", key, val) }},
		{"GET", 1, func() { c.Do(ctx, "GET", key) }},
		{"INCR", 0, func() { c.Do(ctx, "INCR", "alloc:n") }},
		{"DoCached hit", 0, func() { c.DoCached(ctx, time.Minute, "GET", key) }},
		// 100 replies, plus the batch's result slice and its reply buffer.
		{"DoMulti of 100 GETs", 102, func() { c.DoMulti(ctx, cmds...) }},
		{"Pipeline of 100 GETs", 102, func() {
			for range 100 {
				p.Do("GET", key)
			}
			p.Exec(ctx)
		}},
	}
	for _, tc := range cases {
		if got := testing.AllocsPerRun(100, tc.fn); got > tc.max {
			t.Errorf("with an observer, %s allocates %.1f times per call, budget %.0f", tc.name, got, tc.max)
		}
	}
}

// batchEvents is a recorder that also keeps the BatchStart events, for the names
// batches carry.
type batchEvents struct {
	*recorder
	mu     sync.Mutex
	starts []observe.BatchStart
}

func (b *batchEvents) BatchStart(ctx context.Context, e observe.BatchStart) context.Context {
	b.mu.Lock()
	b.starts = append(b.starts, e)
	b.mu.Unlock()
	return b.recorder.BatchStart(ctx, e)
}

// last returns the last batch's start and end (recorder.lastBatch).
func (b *batchEvents) last(t *testing.T) (observe.BatchStart, observe.BatchEnd) {
	t.Helper()
	end := b.lastBatch(t)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts[len(b.starts)-1], end
}

// A DoMulti or Pipeline.Exec of one command stays a batch (its kind, Len 1, no command
// events, as a go-redis pipeline hook still sees a pipeline of one) and carries its
// command's name, as rueidis names the span of a DoMulti of one after its command and
// the database conventions model such a batch as that one operation: an exporter can
// then report it so instead of as "PIPELINE". A longer batch and a transaction carry
// the name their commands share, if they share one (an exporter names them "PIPELINE
// GET", "MULTI INCR"), and none otherwise.
func TestObserverBatchOfOneName(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &batchEvents{recorder: &recorder{}}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	srv.Do(t, "LPUSH", "obs1:list", "x")
	reused := c.Pipeline()
	cases := []struct {
		name   string
		kind   observe.BatchKind
		len    int
		want   string // the name the events carry
		failed int
		run    func() ([]Result, error)
	}{
		{"DoMulti of one", observe.Multi, 1, "SET", 0, func() ([]Result, error) {
			return c.DoMulti(ctx, []any{"set", "obs1:a", "1"})
		}},
		{"DoMulti of one error reply", observe.Multi, 1, "INCR", 1, func() ([]Result, error) {
			return c.DoMulti(ctx, []any{"INCR", "obs1:list"})
		}},
		{"DoMulti of two", observe.Multi, 2, "GET", 0, func() ([]Result, error) {
			return c.DoMulti(ctx, []any{"GET", "obs1:a"}, []any{"get", "obs1:a"})
		}},
		{"DoMulti of two names", observe.Multi, 2, "", 0, func() ([]Result, error) {
			return c.DoMulti(ctx, []any{"GET", "obs1:a"}, []any{"SET", "obs1:a", "1"})
		}},
		{"Pipeline of one", observe.Pipeline, 1, "GET", 0, func() ([]Result, error) {
			return c.Pipeline().Do("get", "obs1:a").Exec(ctx)
		}},
		{"Pipeline of two", observe.Pipeline, 2, "", 0, func() ([]Result, error) {
			return reused.Do("GET", "obs1:a").Do("SET", "obs1:a", "2").Exec(ctx)
		}},
		// The name is the current round's command, not the first the pipeline saw.
		{"Pipeline of one after two", observe.Pipeline, 1, "INCR", 0, func() ([]Result, error) {
			return reused.Do("INCR", "obs1:a").Exec(ctx)
		}},
		{"Pipeline of one the table lacks", observe.Pipeline, 1, "OBS1.NOSUCH", 1, func() ([]Result, error) {
			return c.Pipeline().Do("OBS1.NOSUCH").Exec(ctx)
		}},
		{"Pipeline of two of one name", observe.Pipeline, 2, "GET", 0, func() ([]Result, error) {
			return reused.Do("GET", "obs1:a").Do("GET", "obs1:a").Exec(ctx)
		}},
		{"transaction of one", observe.Transaction, 1, "SET", 0, func() (res []Result, err error) {
			err = c.Watch(ctx, func(tx *Tx) error {
				res, err = tx.Exec(ctx, []any{"SET", "obs1:a", "3"})
				return err
			}, "obs1:a")
			return res, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.run()
			if err != nil || len(res) != tc.len {
				t.Fatalf("%d results, %v", len(res), err)
			}
			start, end := rec.last(t)
			if start.Kind != tc.kind || start.Len != tc.len || start.Name != tc.want {
				t.Errorf("BatchStart %+v, want kind %v, len %d, name %q", start, tc.kind, tc.len, tc.want)
			}
			if end.Kind != tc.kind || end.Len != tc.len || end.Name != tc.want || end.Outcome != observe.OK || end.Failed != tc.failed {
				t.Errorf("BatchEnd %+v, want kind %v, len %d, name %q, ok, %d failed", end, tc.kind, tc.len, tc.want, tc.failed)
			}
		})
	}
	// A batch of one is not also reported as a command (nor is Watch's WATCH).
	rec.recorder.mu.Lock()
	defer rec.recorder.mu.Unlock()
	if n := len(rec.recorder.starts); n != 0 {
		t.Errorf("%d CommandStart events for batches", n)
	}
}

// Naming a batch of one costs no allocation: a DoMulti or Pipeline.Exec of one GET
// allocates as much with an observer as without.
func TestObserverBatchOfOneAllocs(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	// Not a constant: its conversion to any would allocate if an event kept it.
	key := strings.Repeat("k", 10)
	srv.Do(t, "SET", key, "v")
	allocs := func(obs observe.Observer) (doMulti, pipeline float64) {
		c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: obs})
		if _, err := c.Do(ctx, "GET", key); err != nil {
			t.Fatal(err)
		}
		p := c.Pipeline()
		doMulti = testing.AllocsPerRun(100, func() { c.DoMulti(ctx, []any{"GET", key}) })
		pipeline = testing.AllocsPerRun(100, func() { p.Do("GET", key).Exec(ctx) })
		return doMulti, pipeline
	}
	bareMulti, barePipeline := allocs(nil)
	multi, pipeline := allocs(&noopObserver{})
	if multi > bareMulti || pipeline > barePipeline {
		t.Errorf("with an observer a batch of one allocates %.1f (DoMulti) and %.1f (Pipeline) times, without %.1f and %.1f", multi, pipeline, bareMulti, barePipeline)
	}
	t.Logf("DoMulti of one: %.1f allocations, Pipeline of one: %.1f (with an observer and without)", multi, pipeline)
}

// A checkout of a dedicated connection that waits for the pool is one PoolWait, with
// the server's address; one that does not wait is none.
func TestObserverPoolWait(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec, PoolSize: 1})
	ctx := context.Background()
	_, release, err := c.Dedicated(ctx, "obs:k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, release, err := c.Dedicated(ctx, "obs:k")
		if err == nil {
			release(true)
		}
		got <- err
	}()
	testkit.WaitFor(t, "the second checkout to wait", func() bool { return c.PoolStats().Waiters == 1 })
	release(true)
	if err := <-got; err != nil {
		t.Fatalf("second checkout: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.waits) != 1 || rec.waits[0].Addr != srv.Addr() || rec.waits[0].Err != nil || rec.waits[0].Wait <= 0 {
		t.Errorf("PoolWait events %+v, want one from %s without error", rec.waits, srv.Addr())
	}
}

// Each round trip of Scan is a command the observer sees, as HScan's are: named SCAN,
// with the server's address.
func TestObserverScan(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for i := range 30 {
		srv.Do(t, "SET", fmt.Sprintf("scan:%d", i), "v")
	}
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	n := 0
	for _, err := range c.Scan(context.Background(), ScanOptions{Count: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("Scan yielded %d keys, want 30", n)
	}
	rec.lastEnd(t) // every start ended
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ends) < 2 {
		t.Errorf("%d CommandEnd events for a Scan of 30 keys by 5, want one a round trip", len(rec.ends))
	}
	for _, e := range rec.ends {
		if e.Name != "SCAN" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
			t.Errorf("CommandEnd %+v, want SCAN on %s, ok", e, srv.Addr())
		}
	}
}

// On a Cluster, a batch whose keys are all on one node (a hash tag) names that node in
// BatchEnd.Addr, DoMulti's and a Pipeline's alike; one split across nodes names none.
func TestObserverClusterBatchAddr(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := clusterTestContext(t)
	rec := &recorder{}
	c := clusterClient(t, cl, Options{Observer: rec})
	const slot = 4242
	one := [][]any{{"SET", clusterserver.KeyIn(slot, "a"), "1"}, {"GET", clusterserver.KeyIn(slot, "b")}}
	spread := [][]any{{"GET", clusterserver.KeyIn(0, "obs")}, {"GET", clusterserver.KeyIn(cluster.SlotCount-1, "obs")}}
	owner := cl.MasterOf(t, slot).Addr()
	pipeline := func(cmds [][]any) ([]Result, error) {
		p := c.Pipeline()
		for _, args := range cmds {
			p.Do(args...)
		}
		return p.Exec(ctx)
	}
	for _, tc := range []struct {
		name string
		run  func(cmds [][]any) ([]Result, error)
	}{
		{"multi", func(cmds [][]any) ([]Result, error) { return c.DoMulti(ctx, cmds...) }},
		{"pipeline", pipeline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.run(one); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != owner || e.Outcome != observe.OK {
				t.Errorf("batch on %s alone: BatchEnd %+v", owner, e)
			}
			if _, err := tc.run(spread); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != "" || e.Outcome != observe.OK {
				t.Errorf("batch split across nodes: BatchEnd %+v", e)
			}
		})
	}
}

// A tracked connection closed on purpose, as the router closes the old master's at a
// Sentinel failover, is not reported lost; a tracked connection that breaks is.
func TestObserverTrackingClosedIsNotLost(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := cachedClientT(t, srv, Options{Observer: rec})
	tracked := func() *conn.Conn {
		cachedText(t, c, time.Hour, "GET", "obs:r")
		tr := c.tracking
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.conns[srv.Addr()]
	}
	old := tracked()
	if old == nil {
		t.Fatal("no tracked connection")
	}
	old.Close()
	testkit.WaitFor(t, "a new tracked connection", func() bool {
		cn := tracked()
		return cn != nil && cn != old
	})
	if _, ok := rec.cacheEvent(observe.CacheTrackingLost); ok {
		t.Fatal("a tracked connection closed on purpose was reported lost")
	}
	if killTracked(t, srv) == 0 {
		t.Fatal("no tracking connection to kill")
	}
	testkit.WaitFor(t, "the tracking-lost event of the broken connection", func() bool {
		_, ok := rec.cacheEvent(observe.CacheTrackingLost)
		return ok
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	n := 0
	for _, e := range rec.caches {
		if e.Kind == observe.CacheTrackingLost {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d CacheTrackingLost events for one connection closed on purpose and one broken, want 1", n)
	}
}

// panicCtx is a context whose Done and Err panic: a call sent with it panics on the
// caller's goroutine after its start event.
type panicCtx struct{ context.Context }

func (panicCtx) Done() <-chan struct{} { panic("panicCtx.Done") }
func (panicCtx) Err() error            { panic("panicCtx.Err") }

// panicking is a recorder whose start events hand back a panicCtx.
type panicking struct{ *recorder }

func (p panicking) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	return panicCtx{p.recorder.CommandStart(ctx, e)}
}

func (p panicking) BatchStart(ctx context.Context, e observe.BatchStart) context.Context {
	return panicCtx{p.recorder.BatchStart(ctx, e)}
}

// A call that panics on the caller's goroutine after its start event still ends it,
// with an unknown outcome, on every observed path.
func TestObserverEndsAfterPanic(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	calls := []struct {
		name  string
		batch bool
		run   func(c *Client)
	}{
		{"Do", false, func(c *Client) { c.Do(ctx, "GET", "p:k") }},
		{"DoCached", false, func(c *Client) { c.DoCached(ctx, time.Minute, "GET", "p:k") }},
		{"DoOn", false, func(c *Client) {
			cn, release, err := c.Dedicated(ctx, "p:k")
			if err != nil {
				t.Fatal(err)
			}
			defer release(false)
			c.link.Do(ctx, cn.cn, route.SharedLane, conn.CallOptions{}, "GET", "p:k")
		}},
		{"Tx.Do", false, func(c *Client) {
			c.Watch(ctx, func(tx *Tx) error { _, err := tx.Do(ctx, "GET", "p:k"); return err }, "p:k")
		}},
		{"DoMulti", true, func(c *Client) { c.DoMulti(ctx, []any{"GET", "p:k"}) }},
		{"Pipeline", true, func(c *Client) { c.Pipeline().Do("GET", "p:k").Exec(ctx) }},
		{"Tx.Exec", true, func(c *Client) {
			c.Watch(ctx, func(tx *Tx) error { _, err := tx.Exec(ctx, []any{"GET", "p:k"}); return err }, "p:k")
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c := cachedClientT(t, srv, Options{Observer: panicking{rec}})
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the call did not panic")
					}
				}()
				tc.run(c)
			}()
			var outcome observe.Outcome
			var err error
			if tc.batch {
				e := rec.lastBatch(t)
				outcome, err = e.Outcome, e.Err
			} else {
				e := rec.lastEnd(t)
				outcome, err = e.Outcome, e.Err
			}
			if outcome != observe.Unknown || err != errPanicked {
				t.Errorf("the end event says %v, %v; want unknown, errPanicked", outcome, err)
			}
		})
	}
}

// In a transaction, a command or an Exec refused before it was sent is reported as
// Do reports one, not sent and with no address, whether it was refused by its
// arguments, its slot or a second Exec.
func TestObserverTxNotSent(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	check := func(t *testing.T, e observe.CommandEnd, err error) {
		t.Helper()
		if err == nil || e.Outcome != observe.NotSent || e.Addr != "" || e.Err != err {
			t.Errorf("end event %+v for %v, want not sent, no address", e, err)
		}
	}
	t.Run("Do", func(t *testing.T) {
		for _, args := range [][]any{{"SELECT", "1"}, {"SET", "tx:k", struct{}{}}} {
			var err error
			c.Watch(ctx, func(tx *Tx) error { _, err = tx.Do(ctx, args...); return nil }, "tx:k")
			check(t, rec.lastEnd(t), err)
		}
	})
	t.Run("Exec", func(t *testing.T) {
		var errs []error
		c.Watch(ctx, func(tx *Tx) error {
			_, err := tx.Exec(ctx, []any{"SET", "tx:k", struct{}{}})
			errs = append(errs, err)
			_, err = tx.Exec(ctx, []any{"SET", "tx:k", "v"})
			errs = append(errs, err)
			return nil
		}, "tx:k")
		rec.mu.Lock()
		got := append([]observe.BatchEnd(nil), rec.batches...)
		rec.mu.Unlock()
		if len(got) != len(errs) {
			t.Fatalf("%d BatchEnd events for %d refused Execs", len(got), len(errs))
		}
		for i, e := range got {
			check(t, observe.CommandEnd{Outcome: e.Outcome, Addr: e.Addr, Err: e.Err}, errs[i])
		}
	})
}

// A command the table lacks is named by its first argument when that is a string, and
// UNKNOWN when it is not, which naming it would allocate for.
func TestObserverUnknownCommandName(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	for _, tc := range []struct {
		name any
		want string
	}{
		{"NoSuchCommand", "NoSuchCommand"},
		{[]byte("NoSuchCommand"), "UNKNOWN"},
	} {
		c.Do(context.Background(), tc.name, "x")
		if e := rec.lastEnd(t); e.Name != tc.want || e.Outcome != observe.ServerError {
			t.Errorf("%T name: CommandEnd %s, %v; want %s, server_error", tc.name, e.Name, e.Outcome, tc.want)
		}
	}
}

// A discarded pipeline sends nothing and reports no batch; its next Exec carries only
// what was added after the Discard, under that command's name.
func TestPipelineDiscard(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &batchEvents{recorder: &recorder{}}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	ctx := context.Background()
	p := c.Pipeline()
	p.Do("SET", "discard:a", "1").Do("INCR", "discard:n")
	p.Discard()
	if p.Len() != 0 {
		t.Fatalf("Len after Discard = %d, want 0", p.Len())
	}
	rec.mu.Lock()
	started := len(rec.starts)
	rec.mu.Unlock()
	if started != 0 {
		t.Fatalf("Discard reported %d batches", started)
	}
	res, err := p.Do("GET", "discard:a").Exec(ctx)
	if err != nil || len(res) != 1 {
		t.Fatalf("Exec after Discard = %v, %v; want one result", res, err)
	}
	if v, err := res[0].Value, res[0].Err; err != nil || !v.IsNull() {
		t.Fatalf("GET discard:a = %v, %v; want null: the discarded SET was sent", v, err)
	}
	if start, _ := rec.last(t); start.Name != "GET" || start.Len != 1 {
		t.Fatalf("the batch after Discard started as %q of %d, want GET of 1", start.Name, start.Len)
	}
	if v := srv.Do(t, "EXISTS", "discard:n"); v != "0" {
		t.Fatalf("EXISTS discard:n = %v: the discarded INCR ran", v)
	}
}
