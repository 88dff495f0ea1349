package testkit

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/respire/respire/resp"
)

// Nodes serves every connection a client dials, in-process over net.Pipe: each command
// read is passed to a handler, and what the handler returns is written back as the raw
// reply. A handler runs on the connection's serving goroutine, so it may block to hold
// a reply back. Nodes is safe inside a testing/synctest bubble: there its pipes and
// goroutines belong to the bubble, and Close ends them.
type Nodes struct {
	handle func(addr string, args []string) string

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // both ends of every connection still served
	served sync.WaitGroup
}

// NewNodes returns Nodes that answer with handle; addr is the address the client
// dialed, args the command's arguments as text (HELLO included: see Hello).
func NewNodes(handle func(addr string, args []string) string) *Nodes {
	return &Nodes{handle: handle, conns: map[net.Conn]struct{}{}}
}

// Dial is a dialer of the shape connection options take.
func (n *Nodes) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	cli, srv := net.Pipe()
	n.mu.Lock()
	n.conns[cli], n.conns[srv] = struct{}{}, struct{}{}
	n.mu.Unlock()
	n.served.Go(func() { n.serve(addr, cli, srv) })
	return cli, nil
}

func (n *Nodes) serve(addr string, cli, srv net.Conn) {
	defer func() {
		n.mu.Lock()
		delete(n.conns, cli)
		delete(n.conns, srv)
		n.mu.Unlock()
		srv.Close()
	}()
	rd := resp.NewReader(bufio.NewReader(srv), resp.Limits{})
	for {
		v, err := rd.Read()
		if err != nil {
			return // the client closed, or Close did
		}
		elems, err := v.Array()
		if err != nil || len(elems) == 0 {
			return
		}
		args := make([]string, len(elems))
		for i, e := range elems {
			args[i], _ = e.Text()
		}
		if _, err := srv.Write([]byte(n.handle(addr, args))); err != nil {
			return
		}
	}
}

// Close ends every connection and waits for the goroutines serving them.
func (n *Nodes) Close() {
	n.mu.Lock()
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	n.served.Wait()
}

// Hello is the reply of a Redis server of version to HELLO 3, announcing client id.
func Hello(version string, id int64) string {
	return fmt.Sprintf("%%4\r\n+server\r\n+redis\r\n+version\r\n+%s\r\n+proto\r\n:3\r\n+id\r\n:%d\r\n", version, id)
}
