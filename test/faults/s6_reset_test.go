package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S6: connections are reset in the middle of a reply, in the middle of a
// request and in the middle of a pipeline, while callers share the
// auto-pipelined connection and send batches. Promised: each caller gets its
// own reply, or an error that says not-sent or outcome-unknown
// (errors.Is with conn.ErrNotSent / conn.ErrOutcomeUnknown); never another
// caller's reply, never an unclassified error.
func TestS6ResetMidReply(t *testing.T) {
	fig, rng := newFigure(t, "S6")
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	c := testclient.At(t, p.Addr(), respire.Options{ReadTimeout: 2 * time.Second})
	r := history.NewRecorder()
	var ids atomic.Int64
	var unclassified atomic.Int64

	budget := Budget(5*time.Second, 20*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 8 {
		seed := rng.Uint64()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 6))
			for ctx.Err() == nil {
				id, body := s6Payload(ids.Add(1), rng)
				call := r.Begin(w, "echo", id)
				v, err := c.Do(context.WithoutCancel(ctx), "ECHO", body)
				s6End(call, id, body, v, err, &unclassified)
			}
		})
	}
	for w := 8; w < 10; w++ {
		seed := rng.Uint64()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, 6))
			for ctx.Err() == nil {
				pl := c.Pipeline()
				n := 2 + rng.IntN(20)
				calls := make([]*history.Call, n)
				ids, bodies := make([]string, n), make([]string, n)
				for i := range n {
					ids[i], bodies[i] = s6Payload(0, rng)
					ids[i] = fmt.Sprintf("p%d-%d", w, i) + ids[i]
					bodies[i] = fmt.Sprintf("p%d-%d", w, i) + bodies[i]
					calls[i] = r.Begin(w, "echo", ids[i])
					pl.Do("ECHO", bodies[i])
				}
				res, err := pl.Exec(context.WithoutCancel(ctx))
				for i := range n {
					if err != nil {
						s6End(calls[i], ids[i], bodies[i], resp.Value{}, err, &unclassified)
						continue
					}
					s6End(calls[i], ids[i], bodies[i], res[i].Value, res[i].Err, &unclassified)
				}
			}
		})
	}
	// The resets: in a reply (a cut after a random number of reply bytes),
	// in a request, or of everything at once.
	for ctx.Err() == nil {
		switch rng.IntN(3) {
		case 0:
			p.CutAfter(faultproxy.ToClient, rng.Int64N(64<<10))
		case 1:
			p.CutAfter(faultproxy.ToServer, rng.Int64N(64<<10))
		case 2:
			p.ResetAll()
		}
		fig.faults++
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(20+rng.IntN(80)) * time.Millisecond):
		}
		p.CutAfter(faultproxy.Both, -1)
	}
	wg.Wait()

	ops := r.Ops()
	fig.ops = len(ops)
	fig.check(history.CheckOwnReplies(ops, "echo"))
	if history.Count(ops, "echo", history.OK) == 0 {
		t.Error("no reply came back: the own-reply check saw nothing")
	}
	if n := unclassified.Load(); n > 0 {
		fig.check([]history.Violation{{Checker: "S6", Detail: fmt.Sprintf("%d errors matched neither conn.ErrNotSent nor conn.ErrOutcomeUnknown (see the failed ops' errors)", n)}})
		for _, op := range ops {
			if op.Outcome == history.Failed && op.Err != nil && !errors.Is(op.Err, conn.ErrNotSent) {
				t.Logf("unclassified: %v", op)
				break
			}
		}
	}
	t.Logf("replies ok %d, not sent %d, outcome unknown %d; resets by the proxy %d",
		history.Count(ops, "echo", history.OK), history.Count(ops, "echo", history.Failed), history.Count(ops, "echo", history.Unknown), p.Stats().Resets)
	fig.report(t)
}

// s6Payload returns a request id and the ECHO body that carries it, padded
// to a random size (up to 16 KiB) so that cuts fall inside replies.
func s6Payload(n int64, rng *rand.Rand) (id, body string) {
	id = fmt.Sprintf("id%d/%d", n, rng.IntN(16<<10))
	var size int
	fmt.Sscanf(id[strings.IndexByte(id, '/')+1:], "%d", &size)
	return id, id + ":" + strings.Repeat("x", size)
}

// s6End records a reply: its id when the body came back whole, what came
// back otherwise; an error as not-sent (Failed) or unknown.
func s6End(call *history.Call, id, body string, v resp.Value, err error, unclassified *atomic.Int64) {
	switch {
	case err == nil:
		got, _ := v.Text()
		if got == body {
			call.End(history.OK, id, nil)
			return
		}
		if len(got) > 40 {
			got = got[:40]
		}
		call.End(history.OK, got, nil)
	case errors.Is(err, conn.ErrNotSent):
		call.End(history.Failed, nil, err)
	case errors.Is(err, conn.ErrOutcomeUnknown):
		call.End(history.Unknown, nil, err)
	default:
		unclassified.Add(1)
		call.End(history.Failed, nil, err)
	}
}

// A command whose connection cannot be dialled again was never sent, and
// the error must say so (the package respire promise: every error that
// crosses the network matches conn.ErrNotSent or conn.ErrOutcomeUnknown).
func TestS6DialErrorIsNotSent(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	c := testclient.At(t, p.Addr(), respire.Options{DialTimeout: time.Second})
	ctx := context.Background()
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	p.Close() // the connection breaks and nothing listens any more
	// The first command may be written before the break is noticed.
	if _, err := c.Do(ctx, "PING"); !errors.Is(err, conn.ErrNotSent) && !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Errorf("first command after the break: %v", err)
	}
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"do", func() error { _, err := c.Do(ctx, "SET", "s6:k", "v"); return err }},
		{"pipeline", func() error { _, err := c.Pipeline().Do("SET", "s6:k", "v").Exec(ctx); return err }},
	} {
		if err := step.run(); !errors.Is(err, conn.ErrNotSent) {
			t.Errorf("%s with the server unreachable: %v, want an error matching conn.ErrNotSent", step.name, err)
		}
	}
}
