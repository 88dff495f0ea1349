package coordination

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

// refusingDialer dials srv over TCP unless told to refuse, when it fails as a refused
// connection does, counting the refusals.
type refusingDialer struct {
	refuse  atomic.Bool
	refused atomic.Int64
}

func (d *refusingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.refuse.Load() {
		d.refused.Add(1)
		return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// killClients kills the server's connections named name, by id, and returns how many.
func killClients(t *testing.T, srv *testserver.Server, name string) int {
	t.Helper()
	n := 0
	for line := range strings.Lines(srv.Do(t, "CLIENT", "LIST")) {
		var id string
		named := false
		for field := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(field, "id="); ok {
				id = v
			}
			named = named || field == "name="+name
		}
		if named && id != "" {
			srv.Do(t, "CLIENT", "KILL", "ID", id)
			n++
		}
	}
	return n
}

// A fenced waiter whose connections are reset while it waits, and which then cannot
// dial for a while, keeps waiting: its tries were never sent, so they changed nothing.
// It acquires once dials work again and the holder releases.
func TestAcquireFencedLockSurvivesReset(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	holder := New(plainClient(t, srv))
	d := &refusingDialer{}
	waiter := New(testclient.New(t, respire.Options{
		Addrs:           []string{srv.Addr()},
		ClientSideCache: &cache.Options{},
		ClientName:      "fenced-waiter",
		Dialer:          d.dial,
	}))
	ctx := context.Background()
	const lease, fence = "{rs}:lease", "{rs}:fence"

	h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer h.Close()
	type result struct {
		fl  *FencedLock
		err error
	}
	got := make(chan result, 1)
	wctx, cancel := context.WithTimeout(ctx, time.Minute) // a bound on a failure only
	defer cancel()
	armed := srv.Calls(t, "pttl")
	go func() {
		fl, err := waiter.AcquireFencedLock(wctx, lease, fence, 30*time.Second)
		got <- result{fl, err}
	}()
	waitArmed(t, srv, armed)

	d.refuse.Store(true)
	if n := killClients(t, srv, "fenced-waiter"); n == 0 {
		t.Fatal("no connection of the waiter to kill")
	}
	// The lost tracked connection wakes the waiter, whose next tries cannot dial: it
	// must go on trying rather than return the not-sent error.
	var early *result
	testkit.WaitWithin(t, 30*time.Second, "the waiter to try again after refused dials", func() bool {
		select {
		case r := <-got:
			early = &r
			return true
		default:
			return d.refused.Load() >= 3
		}
	})
	if early != nil {
		t.Fatalf("the waiter gave up while dials were refused: %v, %v", early.fl, early.err)
	}
	d.refuse.Store(false)
	if out, err := h.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter after the reset: %v", r.err)
	}
	defer r.fl.Close()
	if r.fl.FencingToken() <= h.FencingToken() {
		t.Fatalf("the waiter's token %d is not above the holder's %d", r.fl.FencingToken(), h.FencingToken())
	}
}
