package coordination

import (
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// plainClient is a client without client-side caching (so without tracking).
func plainClient(t *testing.T, srv *testserver.Server) *respire.Client {
	return testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
}

// trackingClient is a RESP3 client with client-side caching, which waits need.
func trackingClient(t *testing.T, srv *testserver.Server) *respire.Client {
	return testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{}})
}

// calls snapshots the calls of cmds.
func calls(t *testing.T, s *testserver.Server, cmds ...string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, c := range cmds {
		m[c] = s.Calls(t, c)
	}
	return m
}

// waitArmed waits until a waiter has armed a key watch: the server has answered one
// more PTTL than before.
func waitArmed(t *testing.T, s *testserver.Server, before int) {
	t.Helper()
	testkit.WaitFor(t, "the waiter to arm its watch", func() bool { return s.Calls(t, "pttl") > before })
}
