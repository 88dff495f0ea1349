package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/history"
)

// TestS9ClusterReshardAndFailover has workers take a fenced lock on a Cluster, write
// the fenced resource under it and sometimes again after releasing it (a late writer),
// while the slot of their keys is resharded live to another master and that master is
// failed over (CLUSTER FAILOVER, the replica caught up). The history must show no two
// holders at once, fencing tokens increasing in real-time order, the resource never
// accepting a lower token, and a register linearizable under those rules.
func TestS9ClusterReshardAndFailover(t *testing.T) {
	fig, rng := newFigure(t, "S9")
	cl := clusterserver.Start(t, clusterserver.Config{})
	run := Budget(0, 20*time.Minute)
	// The faults stop at run; the margin lets the last ones settle and the checks run.
	ctx, cancel := context.WithTimeout(t.Context(), run+2*time.Minute)
	defer cancel()
	c := connect(ctx, t, respire.Options{Addrs: cl.Seeds(), Cluster: true, ReadTimeout: time.Second})

	// Rounds of fresh keys, each checked on its own, keep every history small enough
	// for the linearizability checker however long the soak.
	deadline := time.Now().Add(run)
	var acquired, acked, unknown int
	for round := 0; round == 0 || (time.Now().Before(deadline) && ctx.Err() == nil); round++ {
		ops := s9Round(ctx, t, rng, cl, c, fig, round)
		fig.ops += len(ops)
		acquired += history.Count(ops, "acquire", history.OK)
		acked += history.Count(ops, history.KindFencedWrite, history.OK)
		unknown += history.Count(ops, history.KindFencedWrite, history.Unknown)
	}
	t.Logf("%d acquisitions, %d fenced writes acknowledged, %d unknown", acquired, acked, unknown)
	if acquired == 0 {
		t.Error("no acquisition at all")
	}
	fig.report(t)
}

// s9Round runs the workers on one round's keys through a live reshard of their slot and
// a failover of its new master, checks the round's history and returns it.
func s9Round(ctx context.Context, t *testing.T, rng *rand.Rand, cl *clusterserver.Cluster, c *respire.Client, fig *figure, round int) []history.Op {
	tag := fmt.Sprintf("{s9-%d}", round)
	lease, fence, data, accepted := tag+":lease", tag+":fence", tag+":data", tag+":accepted"
	const ttl = 2 * time.Second
	co := coordination.New(c)
	res, err := co.Resource(data, accepted)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	section := history.NewSection(rec)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			s9Worker(ctx, w, wrng, stop, co, res, rec, section, lease, fence, ttl)
		}()
	}

	slot := cluster.Slot(lease)
	pause(ctx, time.Duration(300+rng.IntN(700))*time.Millisecond)
	from := cl.MasterOf(t, slot)
	var to *clusterserver.Node
	for _, m := range cl.Masters(t) {
		if m.ID != from.ID {
			to = m
			break
		}
	}
	cl.MigrateSlot(t, slot, to)
	fig.faults++
	pause(ctx, time.Duration(300+rng.IntN(700))*time.Millisecond)
	if replicas := cl.ReplicasOf(t, cl.MasterOf(t, slot)); len(replicas) > 0 {
		cl.Failover(t, replicas[0])
		fig.faults++
	}
	pause(ctx, time.Second) // the workers go on against the settled cluster
	close(stop)
	wg.Wait()

	// The register's last value, read once everything is quiet.
	read := rec.Begin(99, history.KindFencedRead, history.FenceRead{})
	if v, err := c.Do(ctx, "GET", data); err != nil {
		read.End(history.Unknown, nil, err)
	} else {
		s, _ := v.Text()
		read.End(history.OK, s, nil)
	}
	ops := rec.Ops()
	fig.check(section.Violations())
	fig.check(history.CheckExclusive(ops))
	fig.check(history.CheckTokensIncrease(ops, "acquire"))
	fig.check(history.CheckStaleRefused(ops))
	fig.check(history.CheckFencedRegister(ops, 30*time.Second))
	return ops
}

// s9Worker takes the fenced lock, writes the resource under it, exits the section,
// releases, and now and then writes once more with the old token, as a holder that
// missed its release would.
func s9Worker(ctx context.Context, w int, rng *rand.Rand, stop <-chan struct{}, co *coordination.Coordinator,
	res *coordination.Resource, rec *history.Recorder, section *history.Section, lease, fence string, ttl time.Duration) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		call := rec.Begin(w, "acquire", nil)
		fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, ttl)
		switch {
		case err != nil:
			call.End(outcomeOf(err), nil, err)
			pause(ctx, 20*time.Millisecond)
			continue
		case !ok:
			call.End(history.Failed, nil, nil)
			pause(ctx, time.Duration(5+rng.IntN(20))*time.Millisecond)
			continue
		}
		token := fl.FencingToken()
		call.End(history.OK, token, nil)
		section.Enter(w)
		fencedWrite(ctx, w, rec, res, token, fmt.Sprintf("w%d-%d", w, n))
		section.Exit(w)
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		fl.Release(rctx)
		rcancel()
		if rng.IntN(5) == 0 {
			fencedWrite(ctx, w, rec, res, token, fmt.Sprintf("late-w%d-%d", w, n))
		}
	}
}

// fencedWrite writes value with token and records it as the register model wants it.
func fencedWrite(ctx context.Context, w int, rec *history.Recorder, res *coordination.Resource, token int64, value string) {
	call := rec.Begin(w, history.KindFencedWrite, history.FenceWrite{Token: token, Value: value})
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := res.Write(wctx, token, "SET", value)
	switch {
	case err == nil:
		call.End(history.OK, true, nil)
	case errors.Is(err, coordination.ErrStaleToken):
		call.End(history.OK, false, nil)
	default:
		call.End(outcomeOf(err), nil, err)
	}
}

// outcomeOf says what a failed call's error tells about its effect: none when it was
// not sent or the server refused it, unknown otherwise.
func outcomeOf(err error) history.Outcome {
	var se *resp.ServerError
	if errors.Is(err, conn.ErrNotSent) || errors.Is(err, lock.ErrInvalidArg) || errors.As(err, &se) {
		return history.Failed
	}
	return history.Unknown
}

// connect makes a client of a deployment (several addresses, unlike newClient) and
// closes it when the test ends.
func connect(ctx context.Context, t *testing.T, opts respire.Options) *respire.Client {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := respire.NewClient(cctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pause waits d or until ctx ends: the scenario's own pacing, not a synchronisation.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
