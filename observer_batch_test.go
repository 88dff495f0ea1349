package respire

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

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
	if raceEnabled {
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
