package route

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// fakeNodes is a scripted deployment for router tests: every address a router dials
// is served in-process over net.Pipe by handle, which answers each command with raw
// RESP. HELLO is answered as Redis 7 would, so connections speak RESP3. It is safe
// inside a testing/synctest bubble, where its pipes and goroutines belong to the
// bubble: close ends them, and the test waits for them.
type fakeNodes struct {
	t      testing.TB
	handle func(addr string, args []string) string

	mu     sync.Mutex
	conns  []net.Conn
	served sync.WaitGroup
	calls  map[string][]string // commands seen, by address, HELLO left out
}

func newFakeNodes(t testing.TB, handle func(addr string, args []string) string) *fakeNodes {
	return &fakeNodes{t: t, handle: handle, calls: map[string][]string{}}
}

// dial is a conn.Options Dialer.
func (f *fakeNodes) dial(_ context.Context, _, addr string) (net.Conn, error) {
	cli, srv := net.Pipe()
	f.mu.Lock()
	f.conns = append(f.conns, cli, srv)
	f.mu.Unlock()
	f.served.Add(1)
	go f.serve(addr, srv)
	return cli, nil
}

func (f *fakeNodes) serve(addr string, srv net.Conn) {
	defer f.served.Done()
	defer srv.Close()
	rd := resp.NewReader(bufio.NewReader(srv), resp.Limits{})
	for {
		v, err := rd.Read()
		if err != nil {
			return // the client closed
		}
		elems, _ := v.Array()
		args := make([]string, len(elems))
		for i, e := range elems {
			args[i], _ = e.Text()
		}
		var reply string
		if strings.EqualFold(args[0], "HELLO") {
			reply = "%4\r\n+server\r\n+redis\r\n+version\r\n+7.2.0\r\n+proto\r\n:3\r\n+id\r\n:42\r\n"
		} else {
			f.mu.Lock()
			f.calls[addr] = append(f.calls[addr], strings.Join(args, " "))
			f.mu.Unlock()
			reply = f.handle(addr, args)
		}
		if _, err := srv.Write([]byte(reply)); err != nil {
			return
		}
	}
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
func (f *fakeNodes) close() {
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.served.Wait()
}

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
