package lock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// releaseDeadliner gives a lock's release command (DELEX, DELIFEQ or the script) a
// context that ends after d, as an observer that bounds each command may, and counts
// cut-offs.
type releaseDeadliner struct {
	observe.Base
	d       time.Duration
	cutoffs atomic.Int32
}

func (o *releaseDeadliner) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	switch e.Name {
	case "DELEX", "DELIFEQ", "EVALSHA", "EVAL":
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(o.d, cancel)
	}
	return ctx
}

func (o *releaseDeadliner) Cutoff(observe.Cutoff) { o.cutoffs.Add(1) }

// A release whose own context cannot end goes on the shared connection; when an
// observer hands its command one that ends while the delete waits, the lock counts as
// lost, but the live shared connection is not cut off (no CLIENT KILL, a GET on it
// gets its reply).
func TestUncertainReleaseSparesTheSharedConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	obs := &releaseDeadliner{d: 50 * time.Millisecond}
	c := testclient.At(t, srv.Addr(), respire.Options{Observer: obs})
	locks := New(c)
	ctx := context.Background()
	mu, ok, err := locks.TryAcquire(ctx, "locks:shared-release", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	srv.Do(t, "CLIENT", "PAUSE", "1000", "WRITE") // the delete waits; reads behind it too
	released := make(chan error, 1)
	go func() {
		_, err := mu.Release(ctx)
		released <- err
	}()
	got := make(chan error, 1)
	go func() {
		// On the shared connection, before or behind the delete: either way the
		// connection must survive the release's uncertainty.
		_, err := c.Do(ctx, "GET", "locks:other")
		got <- err
	}()
	if err := <-released; !errors.Is(err, ErrOwnershipUncertain) {
		t.Fatalf("Release: %v, want ErrOwnershipUncertain", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the GET behind the uncertain release: %v", err)
	}
	if n := obs.cutoffs.Load(); n != 0 {
		t.Fatalf("%d cut-offs of the shared connection", n)
	}
}
