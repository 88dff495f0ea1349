package conn

import (
	"context"
	"net"
	"testing"

	"github.com/respire/respire/internal/testkit"
)

// fakeServer is the scripted far end of a connection's transport (internal/testkit).
type fakeServer = testkit.Server

// helloRESP3 answers HELLO with a RESP3 map announcing client id 42.
var helloRESP3 = (*fakeServer).HelloRESP3

// dialFake dials a Conn whose transport is a pipe to a fake server; answerHandshake
// plays the server's side of the handshake.
func dialFake(t *testing.T, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	cli, f := testkit.Pipe(t)
	return dialFakeOver(t, cli, f, opts, answerHandshake)
}

// dialFakeTCP is dialFake over a real loopback socket, for behaviour that depends on
// the kernel buffering what the fake writes.
func dialFakeTCP(t *testing.T, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	cli, f := testkit.TCP(t)
	return dialFakeOver(t, cli, f, opts, answerHandshake)
}

func dialFakeOver(t *testing.T, cli net.Conn, f *fakeServer, opts Options, answerHandshake func(f *fakeServer)) (*Conn, *fakeServer) {
	t.Helper()
	opts.Dialer = testkit.Dialer(cli)
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
