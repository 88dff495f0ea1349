package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// s10StaleBound is how long after its connection was cut a client may go on serving a
// cached reply the lost invalidation would have dropped: the time to notice the reset,
// with room for the race detector on a loaded machine. A cache that kept the entry
// across the reconnect would serve it until its TTL (a minute here).
const s10StaleBound = 2 * time.Second

// loseInvalidation changes the key behind the client's back and makes sure the
// invalidation never reaches it: the tracked connection is cut between the client's
// read and the push, in one of three ways.
func loseInvalidation(t *testing.T, rng *rand.Rand, p *faultproxy.Proxy, change func()) string {
	switch rng.IntN(3) {
	case 0: // the push is swallowed, then the connection reset
		p.Blackhole(faultproxy.ToClient)
		change()
		p.ResetAll()
		p.Heal()
		return "blackhole+reset"
	case 1: // the push is held back and discarded with the connection
		p.Pause(faultproxy.ToClient)
		change()
		p.ResetAll()
		p.Heal()
		return "pause+reset"
	default: // the connection is reset first and the change races the reconnect
		p.ResetAll()
		change()
		return "reset+change"
	}
}

// TestS10TrackingInvalidationLoss reads a key through the client-side cache, loses the
// invalidation of its next write by cutting the tracked connection, and reads again:
// once the client has reconnected no read may return the old value, and reads never go
// back. A fenced waiter whose wake-up is lost the same way must still acquire, long
// before the lease's TTL would have woken it.
func TestS10TrackingInvalidationLoss(t *testing.T) {
	fig, rng := newFigure(t, "S10")
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	c := testclient.At(t, p.Addr(), respire.Options{ClientSideCache: &cache.Options{}, ReadTimeout: time.Second})
	direct := testclient.At(t, srv.Addr(), respire.Options{})
	rec := history.NewRecorder()
	run := Budget(6*time.Second, 20*time.Minute)
	// The faults stop at run; the margin lets the last ones settle and the checks run.
	ctx, cancel := context.WithTimeout(t.Context(), run+2*time.Minute)
	defer cancel()

	deadline := time.Now().Add(run)
	var worstStale time.Duration
	var waits, waitFailed int
	for round := 0; time.Now().Before(deadline); round++ {
		key := "s10:k" + strconv.Itoa(round%8)
		old, next := strconv.Itoa(2*round), strconv.Itoa(2*round+1)
		if _, err := direct.Do(ctx, "SET", key, old); err != nil {
			t.Fatal(err)
		}
		if v := cachedRead(ctx, t, c, rec, key); v != old {
			t.Fatalf("round %d: first read %q, want %q", round, v, old)
		}
		cachedRead(ctx, t, c, rec, key) // a hit, most likely
		var acked time.Time
		how := loseInvalidation(t, rng, p, func() {
			if _, err := direct.Do(ctx, "SET", key, next); err != nil {
				t.Fatal(err)
			}
			acked = time.Now()
		})
		fig.faults++
		// Read until the new value shows; the old one is allowed only within the bound.
		sawNew := false
		for !sawNew {
			v := cachedRead(ctx, t, c, rec, key)
			switch {
			case v == next:
				sawNew = true
			case v == old && time.Since(acked) > s10StaleBound:
				fig.check([]history.Violation{{Checker: "S10 stale after reconnect",
					Detail: fmt.Sprintf("round %d (%s): %s still read %q %v after %q was acknowledged", round, how, key, v, time.Since(acked), next)}})
				sawNew = true // one finding a round is enough
			case v == old:
				worstStale = max(worstStale, time.Since(acked))
				pause(ctx, time.Millisecond) // read again soon, not in a tight loop
			case v != "":
				fig.check([]history.Violation{{Checker: "S10 stale after reconnect",
					Detail: fmt.Sprintf("round %d: %s read %q, neither %q nor %q", round, key, v, old, next)}})
				sawNew = true
			}
			if ctx.Err() != nil {
				t.Fatalf("round %d: %v", round, ctx.Err())
			}
		}
		if v := cachedRead(ctx, t, c, rec, key); v != next && v != "" {
			fig.check([]history.Violation{{Checker: "S10 read went back",
				Detail: fmt.Sprintf("round %d: %s read %q after %q", round, key, v, next)}})
		}
		if round%3 == 0 {
			waits++
			fencedWaiterWakes(ctx, t, rng, p, c, direct, fig, round, &waitFailed)
		}
	}
	fig.ops = len(rec.Ops())
	t.Logf("%d fenced waits, %d failed with the reset of their own attempt", waits, waitFailed)
	t.Logf("longest an old value was still read after its change was acknowledged: %v", worstStale)
	fig.report(t)
}

// cachedRead is one recorded DoCached GET; it returns "" when the read failed (a reset
// connection fails a read in flight, which is not a stale read).
func cachedRead(ctx context.Context, t *testing.T, c *respire.Client, rec *history.Recorder, key string) string {
	call := rec.Begin(0, "cached-get", key)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := c.DoCached(rctx, time.Minute, "GET", key)
	if err != nil {
		call.End(history.Unknown, nil, err)
		return ""
	}
	s, _ := v.Text()
	call.End(history.OK, s, nil)
	return s
}

// fencedWaiterWakes has the client wait for a fenced lock that another client holds
// with a long lease, releases it while the waiter's wake-up is lost, and checks that
// the waiter acquires once its connection is back, not at the lease's TTL.
func fencedWaiterWakes(ctx context.Context, t *testing.T, rng *rand.Rand, p *faultproxy.Proxy, c, direct *respire.Client, fig *figure, round int, failed *int) {
	t.Helper()
	lease, fence := fmt.Sprintf("{s10f%d}:lease", round), fmt.Sprintf("{s10f%d}:fence", round)
	holder, ok, err := coordination.New(direct).TryAcquireFencedLock(ctx, lease, fence, time.Minute)
	if err != nil || !ok {
		t.Fatalf("holder: %v %v", ok, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	got := make(chan error, 1)
	go func() {
		fl, err := coordination.New(c).AcquireFencedLock(wctx, lease, fence, time.Minute)
		if err == nil && fl.FencingToken() <= holder.FencingToken() {
			err = fmt.Errorf("token %d after the holder's %d", fl.FencingToken(), holder.FencingToken())
		}
		if err == nil {
			_, err = fl.Release(ctx)
		}
		got <- err
	}()
	// A random moment for the fault: the waiter may be waiting already or still trying.
	time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	how := loseInvalidation(t, rng, p, func() {
		if _, err := holder.Release(ctx); err != nil {
			t.Errorf("holder release: %v", err)
		}
	})
	fig.faults++
	// The waiter may fail when the reset hits its own attempt (outcome unknown or not
	// sent, which the caller must handle as the documentation says); what it must not
	// do is sleep until its context ends.
	// A failed redial is not (yet) marked not-sent, though nothing was written: it is
	// logged, not counted, since the waiter did not sleep.
	err = <-got
	switch {
	case err == nil:
	case wctx.Err() != nil:
		fig.check([]history.Violation{{Checker: "S10 fenced waiter",
			Detail: fmt.Sprintf("round %d (%s): waiter for a released lease slept until its context ended: %v", round, how, err)}})
	case !errors.Is(err, conn.ErrOutcomeUnknown) && !errors.Is(err, conn.ErrNotSent):
		t.Logf("round %d (%s): waiter failed with an error marked neither not-sent nor outcome-unknown: %v", round, how, err)
		*failed++
	default:
		*failed++
	}
}
