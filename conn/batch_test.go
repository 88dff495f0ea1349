package conn

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// A command queued while the reader still has replies of its last read to hand out is
// held until they are handed out, so that the callers they wake join it in one write;
// it is written then.
func TestCommandQueuedDuringABurstIsHeldForIt(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	c := dialT(t, srv.Addr(), Options{PushHandler: func(v resp.Value) {
		if strings.Contains(v.String(), `"message"`) {
			entered <- struct{}{}
			<-release
		}
	}})
	ctx := context.Background()
	if err := c.DoConfirmed(ctx, "subscribe", 1, "SUBSCRIBE", "burst"); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	srv.Do(t, "SET", "burst:k", "v")

	// One write, one read back: the GET's reply, the message the PUBLISH sends to this
	// very connection, and the PUBLISH's reply. The push handler holds the reader
	// after the first.
	type multi struct {
		res []Result
		err error
	}
	batch := make(chan multi, 1)
	go func() {
		res, err := c.DoMulti(ctx, []any{"GET", "burst:k"}, []any{"PUBLISH", "burst", "x"})
		batch <- multi{res, err}
	}()
	<-entered

	type single struct {
		v   resp.Value
		err error
	}
	incr := make(chan single, 1)
	go func() {
		v, err := c.Do(ctx, "INCR", "burst:n")
		incr <- single{v, err}
	}()
	state := func() (queued int, writing bool, inflight int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.w.queued), c.w.writing, c.r.inflight.len()
	}
	testkit.WaitFor(t, "INCR held or written", func() bool {
		q, w, n := state()
		return (q == 1 && !w) || n == 2
	})
	if q, w, n := state(); q != 1 || w {
		t.Errorf("INCR queued %d, being written %v, in flight %d: it left while the reader had replies of its read to hand out", q, w, n)
	}

	close(release)
	if m := <-batch; m.err != nil || len(m.res) != 2 || m.res[0].Value.String() != `"v"` || m.res[1].Err != nil {
		t.Fatalf("GET, PUBLISH: %v, %v", m.res, m.err)
	}
	if r := <-incr; r.err != nil || r.v.String() != "1" {
		t.Fatalf("INCR: %v, %v", r.v, r.err)
	}
}
