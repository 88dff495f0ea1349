package testkit

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/resp"
)

// ioTimeout bounds each read and write of the server, so a script that waits for a
// command the client never sends fails instead of hanging the test.
const ioTimeout = 5 * time.Second

// Server is the far end of a transport, driven by a test script. It reads the
// commands the client writes and answers with raw bytes.
type Server struct {
	tb testing.TB
	nc net.Conn
	rd *resp.Reader
}

// Pipe returns the client end of a net.Pipe and the Server at its other end. Both ends
// are closed when the test ends.
func Pipe(tb testing.TB) (net.Conn, *Server) {
	tb.Helper()
	cli, srv := net.Pipe()
	return cli, newServer(tb, cli, srv)
}

// TCP is Pipe over a real loopback socket, for behaviour that depends on the kernel
// buffering what the server writes.
func TCP(tb testing.TB) (net.Conn, *Server) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		cli.Close()
		tb.Fatal(err)
	}
	return cli, newServer(tb, cli, srv)
}

func newServer(tb testing.TB, cli, srv net.Conn) *Server {
	tb.Cleanup(func() {
		srv.Close()
		cli.Close()
	})
	return &Server{tb: tb, nc: srv, rd: resp.NewReader(bufio.NewReader(srv), resp.Limits{})}
}

// Dialer returns a dialer, of the shape connection options take, that hands out cli
// whatever address it is asked for.
func Dialer(cli net.Conn) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(context.Context, string, string) (net.Conn, error) { return cli, nil }
}

// Read reads the next command and returns its arguments as text; on a read error it
// reports the error to the test and returns nil.
func (s *Server) Read() []string {
	s.tb.Helper()
	s.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	v, err := s.rd.Read()
	if err != nil {
		s.tb.Errorf("fake server read: %v", err)
		return nil
	}
	elems, _ := v.Array()
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i], _ = e.Text()
	}
	return out
}

// Expect reads the next command and fails the test unless its arguments are want.
func (s *Server) Expect(want ...string) {
	s.tb.Helper()
	got := s.Read()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		s.tb.Errorf("fake server got %q, want %q", got, want)
	}
}

// Reply writes raw, which should be whole RESP frames unless the test is about partial
// ones.
func (s *Server) Reply(raw string) {
	s.tb.Helper()
	s.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := s.nc.Write([]byte(raw)); err != nil {
		s.tb.Errorf("fake server write: %v", err)
	}
}

// HelloRESP3 expects HELLO 3 and answers it as Redis 7.0.15 would, announcing client
// id 42.
func (s *Server) HelloRESP3() {
	s.tb.Helper()
	s.Expect("HELLO", "3")
	s.Reply(Hello("7.0.15", 42))
}

// Close closes the server's end, as a server that drops the connection does.
func (s *Server) Close() error { return s.nc.Close() }
