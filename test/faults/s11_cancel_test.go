package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S11: bursts of context cancellation, thousands a second, on shared
// (auto-pipelined) commands, pipelines and blocking commands on pooled
// connections, with replies slowed a little so cancellations land while
// they are in flight. Promised: every completed call gets its own reply, a
// cancelled one the context's error with not-sent or outcome-unknown; the
// connection never desyncs (calls after the storm all get their own reply);
// the pool has no slot left checked out; and no goroutine outlives the
// client (goleak in TestMain).
func TestS11CancellationStorm(t *testing.T) {
	fig, rng := newFigure(t, "S11")
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	p.SetLatency(faultproxy.ToClient, 500*time.Microsecond)
	const poolSize = 8
	c := testclient.At(t, p.Addr(), respire.Options{PoolSize: poolSize})
	r := history.NewRecorder()
	var ids atomic.Int64
	var cancelled, bareCancels, badErrors atomic.Int64

	budget := Budget(5*time.Second, 20*time.Minute)
	ctx, stop := context.WithTimeout(context.Background(), budget)
	defer stop()
	end := func(call *history.Call, id string, got string, err error) {
		switch {
		case err == nil:
			call.End(history.OK, got, nil)
		case errors.Is(err, context.Canceled) && (errors.Is(err, conn.ErrNotSent) || errors.Is(err, conn.ErrOutcomeUnknown)):
			cancelled.Add(1)
			call.End(history.Unknown, nil, err)
		case errors.Is(err, context.Canceled):
			// Cancelled before anything was sent, said as the bare context
			// error (pool.Get documents it for a context already ended): the
			// caller's context won, which is what S11 asks; counted.
			bareCancels.Add(1)
			call.End(history.Unknown, nil, err)
		default:
			if badErrors.Add(1) <= 3 {
				t.Logf("unexpected error of %s: %v", id, err)
			}
			call.End(history.Failed, nil, err)
		}
	}
	var wg sync.WaitGroup
	for w := range 16 {
		seed := rng.Uint64()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 11))
			for ctx.Err() == nil {
				cctx, cancel := context.WithCancel(context.Background())
				// Cancel after a random instant: before the write, during
				// the reply wait, or never.
				// Blocking commands get longer, so some of their dials finish.
				within := 1500 * time.Microsecond
				if w%4 == 3 {
					within = 30 * time.Millisecond
				}
				timer := time.AfterFunc(time.Duration(rng.Int64N(int64(within))), cancel)
				id := fmt.Sprintf("c%d", ids.Add(1))
				switch w % 4 {
				case 0, 1:
					call := r.Begin(w, "echo", id)
					v, err := c.Do(cctx, "ECHO", id)
					got, _ := v.Text()
					end(call, id, got, err)
				case 2:
					calls := make([]*history.Call, 4)
					pl := c.Pipeline()
					for i := range calls {
						calls[i] = r.Begin(w, "echo", fmt.Sprintf("%s.%d", id, i))
						pl.Do("ECHO", fmt.Sprintf("%s.%d", id, i))
					}
					res, err := pl.Exec(cctx)
					for i, call := range calls {
						if err != nil {
							end(call, id, "", err)
							continue
						}
						got, _ := res[i].Value.Text()
						end(call, id, got, res[i].Err)
					}
				case 3:
					// A blocking command on a pooled connection, which a
					// cancellation must not leave checked out.
					call := r.Begin(w, "blpop", id)
					_, err := c.Do(cctx, "BLPOP", "s11:empty:"+id, "0.01")
					if err == nil {
						call.End(history.OK, id, nil)
					} else {
						end(call, id, "", err)
					}
				}
				timer.Stop()
				cancel()
			}
		})
	}
	wg.Wait()
	fig.faults = int(cancelled.Load() + bareCancels.Load())
	if cancelled.Load() == 0 {
		t.Error("no cancellation landed while a call was in flight: the storm tested nothing")
	}

	// No desync: calls after the storm each get their own reply.
	for i := range 200 {
		id := fmt.Sprintf("after%d", i)
		call := r.Begin(99, "echo", id)
		v, err := c.Do(context.Background(), "ECHO", id)
		got, _ := v.Text()
		end(call, id, got, err)
	}
	ops := r.Ops()
	fig.ops = len(ops)
	fig.check(history.CheckOwnReplies(ops, "echo", "blpop"))
	if n := badErrors.Load(); n > 0 {
		fig.check([]history.Violation{{Checker: "S11", Detail: fmt.Sprintf("%d calls failed with an error that is neither a classified cancellation nor a reply", n)}})
	}
	// No leaked pool slot once everything returned (a discarded connection
	// may still be closing: give the gauges a moment).
	var st = c.PoolStats()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && (st.InUse != 0 || st.Dialing != 0 || st.Waiters != 0); time.Sleep(10 * time.Millisecond) {
		st = c.PoolStats()
	}
	if st.InUse != 0 || st.Dialing != 0 || st.Waiters != 0 || st.Total > poolSize {
		fig.check([]history.Violation{{Checker: "S11", Detail: fmt.Sprintf("pool after the storm: %+v", st)}})
	}
	secs := time.Since(fig.start).Seconds()
	t.Logf("calls %d, cancelled %d (%.0f/s), bare context errors %d, pool %+v", len(ops), cancelled.Load(), float64(cancelled.Load())/secs, bareCancels.Load(), st)
	fig.report(t)
}
