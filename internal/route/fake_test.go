package route

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
)

// fakeNodes is a scripted deployment for router tests: every address a router dials
// is served in-process (testkit.Nodes) by handle, which answers each command with raw
// RESP. HELLO is answered as Redis 7 would, so connections speak RESP3. It is safe
// inside a testing/synctest bubble, where its pipes and goroutines belong to the
// bubble: close ends them, and the test waits for them.
type fakeNodes struct {
	nodes *testkit.Nodes

	mu    sync.Mutex
	calls map[string][]string // commands seen, by address, HELLO left out
}

// newFakeNodes returns nodes that answer with handle. It still takes the test,
// unused now that testkit.Nodes owns the connections, so that its many callers,
// here and on other branches, need no change.
func newFakeNodes(_ testing.TB, handle func(addr string, args []string) string) *fakeNodes {
	f := &fakeNodes{calls: map[string][]string{}}
	f.nodes = testkit.NewNodes(func(addr string, args []string) string {
		if strings.EqualFold(args[0], "HELLO") {
			return testkit.Hello("7.2.0", 42)
		}
		f.mu.Lock()
		f.calls[addr] = append(f.calls[addr], strings.Join(args, " "))
		f.mu.Unlock()
		return handle(addr, args)
	})
	return f
}

// dial is a conn.Options Dialer.
func (f *fakeNodes) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return f.nodes.Dial(ctx, network, addr)
}

// seen returns the commands addr received, HELLO left out.
func (f *fakeNodes) seen(addr string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls[addr]...)
}

// count returns how many times addr received cmd.
func (f *fakeNodes) count(addr, cmd string) int {
	n := 0
	for _, c := range f.seen(addr) {
		if c == cmd {
			n++
		}
	}
	return n
}

// close ends every connection and waits for the serving goroutines.
func (f *fakeNodes) close() { f.nodes.Close() }

// options are router Options whose connections go to f.
func (f *fakeNodes) options() Options {
	return Options{Conn: conn.Options{Dialer: f.dial}, PoolSize: 2}
}

// slotsReply is a CLUSTER SLOTS reply that gives every slot to the node at addr.
func slotsReply(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$%d\r\n%s\r\n:%s\r\n$2\r\nid\r\n", len(host), host, port)
}

// clusterTopology answers the topology commands as a Redis 6 node would (no CLUSTER
// SHARDS), with every slot on owner; ok is false for other commands.
func clusterTopology(owner string, args []string) (string, bool) {
	if len(args) == 2 && strings.EqualFold(args[0], "CLUSTER") {
		switch strings.ToUpper(args[1]) {
		case "SHARDS":
			return "-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n", true
		case "SLOTS":
			return slotsReply(owner), true
		}
	}
	return "", false
}
