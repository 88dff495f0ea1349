package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/backoff"
	"github.com/respire/respire/internal/testkit"
)

// TestSubscriptionReconnectBacksOff drops a subscription whose every later SUBSCRIBE
// finds the server gone: the first reconnect is at once, and the ones after it wait 50ms, 100ms,
// ... up to 5s (the jitter of internal/backoff scripted to its most), never reconnecting in a loop.
func TestSubscriptionReconnectBacksOff(t *testing.T) {
	defer func(j func(time.Duration) time.Duration) { backoff.Jitter = j }(backoff.Jitter)
	backoff.Jitter = func(n time.Duration) time.Duration { return n }
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			dials []time.Time
			conns []net.Conn // the client's end of each connection, in dial order
		)
		// Dial 0 is the client's shared connection, dial 1 the subscription's; a later
		// one is closed at its SUBSCRIBE. Each connection is served under its dial's
		// number as its address, so that the handler knows which it is.
		nodes := testkit.NewNodes(func(dial string, args []string) string {
			switch args[0] {
			case "HELLO":
				return testkit.Hello("7.0.15", 1)
			case "SUBSCRIBE":
				if n, _ := strconv.Atoi(dial); n > 1 {
					mu.Lock()
					defer mu.Unlock()
					conns[n].Close()
					return ""
				}
				return fmt.Sprintf(">3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(args[1]), args[1])
			}
			return "+OK\r\n"
		})
		defer nodes.Close()
		dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
			mu.Lock()
			defer mu.Unlock()
			cn, err := nodes.Dial(ctx, network, strconv.Itoa(len(dials)))
			dials = append(dials, time.Now())
			conns = append(conns, cn)
			return cn, err
		}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: dial, SubscriptionHealthCheck: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Subscribe(context.Background(), "news"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		conns[1].Close()
		mu.Unlock()
		time.Sleep(20 * time.Second)
		c.Close()
		want := []time.Duration{0, 50, 100, 200, 400, 800, 1600, 3200, 5000, 5000}
		for i := range want {
			want[i] *= time.Millisecond
		}
		mu.Lock()
		defer mu.Unlock()
		var got []time.Duration
		for i := 2; i < len(dials); i++ {
			got = append(got, dials[i].Sub(dials[i-1]))
		}
		if !slices.Equal(got, want) {
			t.Errorf("reconnections %v apart, want %v", got, want)
		}
	})
}
