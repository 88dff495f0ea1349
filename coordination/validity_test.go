package coordination

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// slowWriter holds the next write of any of its connections back for the armed delay:
// the command reaches the server late, which then runs it at once, so its reply comes
// at least that long after the acquisition was sent, with the server's TTL fresh.
type slowWriter struct{ next atomic.Int64 }

func (s *slowWriter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	return slowConn{Conn: nc, s: s}, err
}

type slowConn struct {
	net.Conn
	s *slowWriter
}

func (c slowConn) Write(p []byte) (int, error) {
	if d := time.Duration(c.s.next.Swap(0)); d > 0 {
		time.Sleep(d) // the fault: the delay is a lower bound, nothing waits on it
	}
	return c.Conn.Write(p)
}

// An acquisition whose reply comes at or after its TTL is not held, for every
// coordination lease: it is reported not acquired, with no error, and given back, so
// the next attempt takes the key at once rather than after the TTL. A fenced one has
// advanced the counter.
func TestAcquisitionReplyPastTTL(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	const ttl = 300 * time.Millisecond
	type acquire func(ctx context.Context, co *Coordinator) (ok bool, token int64, err error)
	cases := []struct {
		name string
		try  acquire
	}{
		{"fenced", func(ctx context.Context, co *Coordinator) (bool, int64, error) {
			fl, ok, err := co.TryAcquireFencedLock(ctx, "{late}:lease", "{late}:fence", ttl)
			if !ok {
				return ok, 0, err
			}
			defer fl.Close()
			return ok, fl.FencingToken(), err
		}},
		{"write", func(ctx context.Context, co *Coordinator) (bool, int64, error) {
			l, ok, err := co.TryAcquireWriteLock(ctx, "late:rw", ttl)
			defer l.Close()
			return ok, 0, err
		}},
		{"semaphore", func(ctx context.Context, co *Coordinator) (bool, int64, error) {
			p, ok, err := co.Semaphore("late:sem", 1).TryAcquire(ctx, ttl)
			defer p.Close()
			return ok, 0, err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slow := &slowWriter{}
			c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Dialer: slow.dial})
			ctx := context.Background()
			if _, err := c.Do(ctx, "PING"); err != nil {
				t.Fatal(err)
			}
			co := New(c)
			slow.next.Store(int64(ttl))
			if ok, _, err := tc.try(ctx, co); ok || err != nil {
				t.Fatalf("an acquisition whose reply came %v late: ok %v, err %v; want not acquired, no error", ttl, ok, err)
			}
			ok, token, err := tc.try(ctx, co)
			if !ok || err != nil {
				t.Fatalf("the next acquisition: ok %v, err %v; want the key given back by the late one", ok, err)
			}
			if tc.name == "fenced" && token != 2 {
				t.Fatalf("fencing token %d after a late acquisition; want 2", token)
			}
		})
	}
}
