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
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/sentinelserver"
)

// TestS3SentinelFailover has workers contend for one lock through a Sentinel-managed
// master, each holding it under a keep-alive, sometimes for longer than the lease, the
// others waiting in Acquire, while the master is failed over again and again (SENTINEL
// FAILOVER). A holder stays in the critical section only while its keep-alive context
// lives. Replication is asynchronous, so a failover can lose the lock and let a second
// holder in, as the lock package documents; what it promises, and the history checks,
// is that the first holder finds out at its next renewal: no two holders overlap for
// longer than half a lease plus s3Slack. Every wait must end in the lock or an error
// within its bound.
func TestS3SentinelFailover(t *testing.T) {
	fig, rng := newFigure(t, "S3")
	d := sentinelserver.Start(t, sentinelserver.Config{})
	run := Budget(0, 20*time.Minute)
	// The faults stop at run; the margin lets the last ones settle and the checks run.
	ctx, cancel := context.WithTimeout(t.Context(), run+2*time.Minute)
	defer cancel()
	c := connect(ctx, t, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(), ReadTimeout: time.Second})

	rec := history.NewRecorder()
	section := history.NewSection(rec)
	const (
		key     = "s3:lock"
		ttl     = 2 * time.Second
		waitFor = 20 * time.Second // an Acquire's wait; a failover takes a few seconds
	)
	stop := make(chan struct{})
	var waitsOverrun atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			locks := lock.New(c)
			for {
				select {
				case <-stop:
					return
				default:
				}
				call := rec.Begin(w, "acquire", nil)
				began := time.Now()
				mu, err := locks.Acquire(ctx, key, ttl, lock.WithKeepAlive(), lock.WithWait(waitFor))
				if err != nil {
					call.End(history.Unknown, nil, err)
					// The wait ends at its bound at the latest, with room for a reply in
					// flight and a loaded machine.
					if time.Since(began) > waitFor+5*time.Second {
						waitsOverrun.Add(1)
					}
					if ctx.Err() != nil {
						return
					}
					continue
				}
				call.End(history.OK, nil, nil)
				work := mu.KeepAliveContext()
				section.Enter(w)
				hold := time.Duration(wrng.IntN(300)) * time.Millisecond
				if wrng.IntN(4) == 0 {
					hold = time.Duration(wrng.Int64N(int64(2 * ttl))) // past the lease: only the keep-alive keeps it
				}
				select {
				case <-work.Done():
				case <-time.After(hold):
				case <-stop:
				}
				section.Exit(w)
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				rel := rec.Begin(w, "release", nil)
				out, err := mu.Release(rctx)
				rcancel()
				switch {
				case err != nil:
					rel.End(history.Unknown, out.String(), err)
				default:
					rel.End(history.OK, out.String(), nil)
				}
				mu.Close()
			}
		}()
	}

	deadline := time.Now().Add(run)
	var lastFault time.Duration // when the last failover had a new master, on rec's clock
	for first := true; first || time.Now().Before(deadline); first = false {
		// Let the workers run a while on this master, then fail it over.
		pause(ctx, time.Duration(500+rng.IntN(1500))*time.Millisecond)
		if ctx.Err() != nil {
			break
		}
		d.Failover(t)
		lastFault = rec.Now()
		fig.faults++
	}
	pause(ctx, 2*time.Second) // a while on the last master, so waits begun during the failover end
	close(stop)
	wg.Wait()

	ops := rec.Ops()
	fig.ops = len(ops)
	overlaps, longest, found := checkOverlapsBounded(ops, ttl/2+s3Slack)
	fig.check(found)
	t.Logf("%d overlapping stays after failovers lost the lock (documented), the longest %v; %d overlaps by the exact checker",
		overlaps, longest, len(section.Violations()))
	if n := waitsOverrun.Load(); n > 0 {
		fig.check([]history.Violation{{Checker: "S3 bounded wait", Detail: "an Acquire outlasted its wait bound"}})
	}
	acquired := history.Count(ops, "acquire", history.OK)
	t.Logf("%d acquisitions, %d failed or unknown, %d releases", acquired,
		history.Count(ops, "acquire", history.Unknown), history.Count(ops, "release", history.OK))
	if acquired == 0 {
		t.Error("no acquisition at all")
	}
	if after := acquisitionsAfter(ops, lastFault); after == 0 {
		t.Error("no acquisition after the last failover")
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the scenario ran out of time")
	}
	fig.report(t)
}

// acquisitionsAfter counts the acquisitions that succeeded after at (the last
// failover): by when they returned, since an Acquire that waited out a long hold began
// before it.
func acquisitionsAfter(ops []history.Op, at time.Duration) int {
	n := 0
	for _, op := range ops {
		if op.Kind == "acquire" && op.Outcome == history.OK && op.Return > at {
			n++
		}
	}
	return n
}

// s3Slack is what a holder may take, past the renewal that finds its lock gone, to see
// its keep-alive context end and leave: the renewal's round trip and a goroutine's wake
// on a loaded machine under the race detector.
const s3Slack = time.Second

// checkOverlapsBounded finds the stays in the critical section (kind "hold") that
// overlap and reports each overlap longer than bound as a violation, with the number of
// overlaps and the longest.
func checkOverlapsBounded(ops []history.Op, bound time.Duration) (n int, longest time.Duration, found []history.Violation) {
	var holds []history.Op
	for _, op := range ops {
		if op.Kind == "hold" {
			holds = append(holds, op)
		}
	}
	for i, a := range holds { // sorted by Call, as Ops returns them
		for _, b := range holds[i+1:] {
			if b.Call >= a.Return {
				break
			}
			n++
			overlap := min(a.Return, b.Return) - b.Call
			longest = max(longest, overlap)
			if overlap > bound {
				found = append(found, history.Violation{Checker: "S3 loss noticed within half a lease",
					Detail: fmt.Sprintf("holders %d and %d inside together for %v (bound %v): %v and %v", a.Client, b.Client, overlap, bound, a, b)})
			}
		}
	}
	return n, longest, found
}
