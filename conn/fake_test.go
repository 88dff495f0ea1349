package conn

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/resp"
)

// fakeServer is the far end of a net.Pipe, driven by a test script: it reads the
// commands the connection writes and answers with raw bytes. net.Pipe writes block
// until the fake reads, which lets a test hold a command in the "being written" state.
type fakeServer struct {
	t   *testing.T
	srv net.Conn
	rd  *resp.Reader
}

// dialFake dials a Conn whose transport is a pipe to a fake server. hello is the raw
// reply the fake sends to HELLO; the handshake's other commands are answered by
// answerHandshake.
func dialFake(t *testing.T, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	cli, srv := net.Pipe()
	return dialFakeOver(t, cli, srv, opts, answerHandshake)
}

// dialFakeTCP is dialFake over a real loopback socket, for behaviour that depends on
// the kernel buffering what the fake writes.
func dialFakeTCP(t *testing.T, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return dialFakeOver(t, cli, srv, opts, answerHandshake)
}

func dialFakeOver(t *testing.T, cli, srv net.Conn, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	f := &fakeServer{t: t, srv: srv, rd: resp.NewReader(bufio.NewReader(srv), resp.Limits{})}
	t.Cleanup(func() { srv.Close() })
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) { return cli, nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		answerHandshake(f)
	}()
	c, err := Dial(context.Background(), "fake:6379", opts)
	<-done
	if err != nil {
		t.Fatalf("dial fake: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, f
}

// helloRESP3 answers HELLO with a RESP3 map announcing client id 42.
func helloRESP3(f *fakeServer) {
	f.expect("HELLO", "3")
	f.reply("%4\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:42\r\n")
}

// expect reads one command and fails the test unless it is want.
func (f *fakeServer) expect(want ...string) {
	f.t.Helper()
	got := f.read()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Errorf("fake server got %q, want %q", got, want)
	}
}

func (f *fakeServer) read() []string {
	f.t.Helper()
	f.srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	v, err := f.rd.Read()
	if err != nil {
		f.t.Errorf("fake server read: %v", err)
		return nil
	}
	elems, _ := v.Array()
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i], _ = e.Text()
	}
	return out
}

func (f *fakeServer) reply(raw string) {
	f.t.Helper()
	f.srv.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := f.srv.Write([]byte(raw)); err != nil {
		f.t.Errorf("fake server write: %v", err)
	}
}
