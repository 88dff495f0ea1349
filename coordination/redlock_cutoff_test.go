package coordination

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// cutoffCounter counts the cut-offs (CLIENT KILL) a client reports.
type cutoffCounter struct {
	observe.Base
	n atomic.Int32
}

func (o *cutoffCounter) Cutoff(observe.Cutoff) { o.n.Add(1) }

// A server whose replies stop coming holds up a Redlock's renewal for the node
// timeout only: its renewal's outcome is unknown there, so its connection is cut off,
// but the cut-off (which cannot reach the server until its replies flow again: the
// dial's handshake waits) goes on without the renewal, which returns with the other
// two servers' votes before any cut-off was reported. Before, ResetExpiry waited for
// the cut-off, up to five seconds (review of the coordination code, gap 1).
func TestRedlockRenewalDoesNotWaitForACutOff(t *testing.T) {
	ctx := context.Background()
	var clients []*respire.Client
	for range 2 {
		clients = append(clients, plainClient(t, testserver.Start(t, testserver.Config{})))
	}
	p := faultproxy.Start(t, testserver.Start(t, testserver.Config{}).Addr())
	obs := &cutoffCounter{}
	clients = append(clients, testclient.New(t, respire.Options{
		Addrs: []string{p.Addr()}, DialTimeout: time.Hour, ReadTimeout: time.Hour, Observer: obs,
	}))
	g, err := NewRedlockGroup(clients, RedlockOptions{NodeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rl, ok, err := g.TryAcquire(ctx, "renewal-cut-off", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire: ok %v, %v", ok, err)
	}
	// The renewals' lock connections are dialled before the pause.
	if ok, err := rl.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry with every server up: %v, %v", ok, err)
	}

	p.Pause(faultproxy.ToClient)
	ok, err = rl.ResetExpiry(ctx, time.Minute)
	atReturn := obs.n.Load()
	p.Resume(faultproxy.ToClient)
	if !ok || err != nil {
		t.Fatalf("ResetExpiry with one server silent: %v, %v; want renewed by the other two", ok, err)
	}
	if atReturn != 0 {
		t.Fatalf("%d cut-offs reported when ResetExpiry returned: it waited for the cut-off", atReturn)
	}
	testkit.WaitFor(t, "the cut-off, once the server answers", func() bool { return obs.n.Load() == 1 })
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}
}
