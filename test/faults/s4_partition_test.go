package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S4: three actors contend for one Redlock over three servers, each actor
// reaching each server through a proxy of its own, while partitions cut
// actors off from a minority or a majority of the servers. Promised: never
// two holders inside their validity at once (a holder's stay ends at its
// exit or its ValidUntilEstimate, whichever is first), and an actor cut off
// from a majority never acquires while the cut lasts.
func TestS4PartitionRedlock(t *testing.T) {
	fig, rng := newFigure(t, "S4")
	const actors, nodes = 3, 3
	const ttl = 300 * time.Millisecond
	var servers []*testserver.Server
	for range nodes {
		servers = append(servers, testserver.Start(t, testserver.Config{}))
	}
	proxies := make([][]*faultproxy.Proxy, actors) // [actor][node]
	groups := make([]*coordination.RedlockGroup, actors)
	for a := range actors {
		var clients []*respire.Client
		for _, srv := range servers {
			p := faultproxy.Start(t, srv.Addr())
			proxies[a] = append(proxies[a], p)
			clients = append(clients, testclient.At(t, p.Addr(), respire.Options{ReadTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond}))
		}
		g, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		groups[a] = g
	}

	r := history.NewRecorder()
	budget := Budget(6*time.Second, 20*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var wg sync.WaitGroup
	for a := range actors {
		seed := rng.Uint64()
		wg.Go(func() { s4Actor(ctx, r, a, groups[a], ttl, rand.New(rand.NewPCG(seed, uint64(a)))) })
	}
	// The partitions, from this goroutine: cut one actor off from one node
	// (a minority) or two (a majority), hold, heal.
	for ctx.Err() == nil {
		a := rng.IntN(actors)
		cut := 1 + rng.IntN(2)
		kind := "cut-minority"
		if cut*2 > nodes {
			kind = "cut-majority"
		}
		cutNodes := rng.Perm(nodes)[:cut]
		for _, n := range cutNodes {
			proxies[a][n].Blackhole(faultproxy.Both)
		}
		// The cut is recorded from when it is complete until just before it
		// heals: an acquisition inside that interval saw no answer from it.
		from := r.Now()
		fig.faults++
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100+rng.IntN(400)) * time.Millisecond):
		}
		r.Add(history.Op{Client: a, Kind: kind, Input: cutNodes, Outcome: history.OK, Call: from, Return: r.Now()})
		for _, n := range cutNodes {
			proxies[a][n].Heal()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(rng.IntN(200)) * time.Millisecond):
		}
	}
	wg.Wait()

	ops := r.Ops()
	fig.ops = len(ops)
	fig.check(history.CheckExclusive(ops))
	fig.check(s4NoAcquireWhileCut(ops))
	if history.Count(ops, "acquire", history.OK) == 0 {
		t.Error("no acquisition at all: exclusion was not exercised")
	}
	t.Logf("acquisitions ok %d, refused %d, failed %d; majority cuts %d, minority cuts %d",
		history.Count(ops, "acquire", history.OK), history.Count(ops, "acquire", history.Failed), history.Count(ops, "acquire", history.Unknown),
		history.Count(ops, "cut-majority", history.OK), history.Count(ops, "cut-minority", history.OK))
	fig.report(t)
}

// s4Actor acquires, holds for part of the validity, and releases, until ctx
// ends. Its stays are recorded as "hold" operations ending at the exit or at
// the validity's end, whichever is first.
func s4Actor(ctx context.Context, r *history.Recorder, actor int, g *coordination.RedlockGroup, ttl time.Duration, rng *rand.Rand) {
	for ctx.Err() == nil {
		call := r.Begin(actor, "acquire", nil)
		rl, ok, err := g.TryAcquire(ctx, "s4:lock", ttl)
		switch {
		case err == nil && ok:
			call.End(history.OK, nil, nil)
		case err == nil:
			call.End(history.Failed, nil, nil)
		default:
			call.End(history.Unknown, nil, err) // "unknown": an error, taken or not
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !ok {
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			continue
		}
		enter := r.Now()
		validUntil := at(r, rl.ValidUntilEstimate())
		time.Sleep(time.Duration(rng.Int64N(int64(rl.RemainingEstimate()/2) + 1)))
		exit := min(r.Now(), validUntil)
		r.Add(history.Op{Client: actor, Kind: "hold", Outcome: history.OK, Call: enter, Return: exit})
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		rl.Release(rctx)
		cancel()
	}
}

// s4NoAcquireWhileCut finds an acquisition reported ok by an actor that was
// cut off from a majority from before its call until after its return.
func s4NoAcquireWhileCut(ops []history.Op) []history.Violation {
	var found []history.Violation
	for _, cut := range ops {
		if cut.Kind != "cut-majority" {
			continue
		}
		for _, op := range ops {
			if op.Kind == "acquire" && op.Outcome == history.OK && op.Client == cut.Client && op.Call > cut.Call && op.Return < cut.Return {
				found = append(found, history.Violation{Checker: "S4", Detail: fmt.Sprintf("%v acquired during %v", op, cut)})
			}
		}
	}
	return found
}
