package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestMain checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var protocols = []int{2, 3}

// forEachProtocol runs fn with a client of srv for each protocol, opts' other fields
// as given.
func forEachProtocol(t *testing.T, srv *testserver.Server, opts respire.Options, fn func(t *testing.T, c *respire.Client)) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			o := opts
			o.Addrs = []string{srv.Addr()}
			o.Protocol = proto
			fn(t, testclient.New(t, o))
		})
	}
}

// clusterClient connects to c with opts (Addrs and Cluster set here).
func clusterClient(t *testing.T, c *clusterserver.Cluster, opts respire.Options) *respire.Client {
	t.Helper()
	opts.Addrs = c.Seeds()[:2]
	opts.Cluster = true
	return testclient.New(t, opts)
}

// clusterTestContext is the context of a Cluster test: its deadline makes a
// redirection loop or a stuck refresh fail the test instead of hanging the suite.
func clusterTestContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// owner reads key's value on the node that serves its slot, with the harness's own
// connection, so that the client is not trusted to say where its writes went.
func owner(t *testing.T, c *clusterserver.Cluster, key string) string {
	t.Helper()
	return c.MasterOf(t, cluster.Slot(key)).Do(t, "GET", key)
}

func mustInt(t *testing.T, v resp.Value) int64 {
	t.Helper()
	n, err := v.Int()
	if err != nil {
		t.Fatalf("%v is not an integer: %v", v, err)
	}
	return n
}

// cachedClientT is a client of srv with client-side caching (default options unless
// opts has its own).
func cachedClientT(t *testing.T, srv *testserver.Server, opts respire.Options) *respire.Client {
	t.Helper()
	opts.Addrs = []string{srv.Addr()}
	if opts.ClientSideCache == nil {
		opts.ClientSideCache = &cache.Options{}
	}
	return testclient.New(t, opts)
}

// publishUntilHeard publishes payload on channel until sub delivers it: a
// subscription's first SUBSCRIBE may still be on its way when the test publishes.
func publishUntilHeard(t *testing.T, srv *testserver.Server, sub *respire.Subscription, channel, payload string) {
	t.Helper()
	testkit.WaitFor(t, payload+" on "+channel, func() bool {
		srv.Do(t, "PUBLISH", channel, payload)
		select {
		case m := <-sub.Messages():
			return m.Channel == channel && m.Payload == payload
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
}
