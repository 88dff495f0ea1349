package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ioTimeout bounds the tests' I/O; their other waits poll a condition (testkit.WaitFor).
const ioTimeout = 10 * time.Second

// The ACL users of the test backends.
var testUsers = []testserver.User{
	// lim lacks DEL (so DELEX and DELIFEQ), INCR and CLIENT, but has EVAL.
	{Name: "lim", Password: "lim-pw", Rules: []string{"~*", "&*", "+@all", "-del", "-incr", "-client"}},
	// keyuser may touch only lock:* keys.
	{Name: "keyuser", Password: "key-pw", Rules: []string{"~lock:*", "&*", "+@all"}},
	// noeval may not run scripts, yet the native commands work for it.
	{Name: "noeval", Password: "noeval-pw", Rules: []string{"~*", "&*", "+@all", "-eval", "-evalsha"}},
	// noset may not SET.
	{Name: "noset", Password: "noset-pw", Rules: []string{"~*", "&*", "+@all", "-set"}},
}

// passwords of testUsers by name.
var passwords = map[string]string{"lim": "lim-pw", "keyuser": "key-pw", "noeval": "noeval-pw", "noset": "noset-pw"}

// startBackend starts a real Redis 7 with the test users.
func startBackend(t *testing.T) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Config{Users: testUsers})
}

// startPair starts a backend and an emulator of profile in front of it.
func startPair(t *testing.T, p Profile) (*testserver.Server, *Emulator) {
	t.Helper()
	srv := startBackend(t)
	return srv, Start(t, Config{Backend: srv.Addr(), Profile: p})
}

// rawClient speaks RESP by hand over one TCP connection and returns replies as their
// exact bytes.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	fr *frameReader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc, fr: newFrameReader(nc)}
}

// dialAs dials and authenticates as user ("" or "default" stays the default user).
func dialAs(t *testing.T, addr, user string) *rawClient {
	t.Helper()
	c := dialRaw(t, addr)
	if user != "" && user != "default" {
		if got := c.do("AUTH", user, passwords[user]); got != "+OK\r\n" {
			t.Fatalf("AUTH %s = %q", user, got)
		}
	}
	return c
}

func (c *rawClient) send(args ...string) {
	c.t.Helper()
	cmd, err := resp.AppendCommand(nil, anys(args)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	if _, err := c.nc.Write(cmd); err != nil {
		c.t.Fatalf("write %q: %v", args, err)
	}
}

// read returns the next frame's bytes.
func (c *rawClient) read() string {
	c.t.Helper()
	_, raw, err := c.readFrame(ioTimeout)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return string(raw)
}

func (c *rawClient) readFrame(d time.Duration) (resp.Value, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(d))
	return c.fr.next()
}

// do sends one command and returns its reply's bytes.
func (c *rawClient) do(args ...string) string {
	c.t.Helper()
	c.send(args...)
	return c.read()
}

// value sends one command and returns its reply decoded.
func (c *rawClient) value(args ...string) resp.Value {
	c.t.Helper()
	c.send(args...)
	v, _, err := c.readFrame(ioTimeout)
	if err != nil {
		c.t.Fatalf("%q: %v", args, err)
	}
	return v
}

// clientID returns the connection's CLIENT ID (the backend's).
func (c *rawClient) clientID() string {
	c.t.Helper()
	v := c.value("CLIENT", "ID")
	n, err := v.Int()
	if err != nil {
		c.t.Fatalf("CLIENT ID = %v", v)
	}
	return itoa(n)
}

// expectClosed waits until the server closes the connection, with nothing else to
// read first.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	v, raw, err := c.readFrame(ioTimeout)
	if err == nil {
		c.t.Fatalf("read %q (%v), want the connection closed", raw, v)
	}
	if !errors.Is(err, io.EOF) && !isReset(err) {
		c.t.Fatalf("read: %v, want EOF", err)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	t.Cleanup(cancel)
	return ctx
}

func args(a ...string) []string { return a }

func anys(a []string) []any {
	out := make([]any, len(a))
	for i, s := range a {
		out[i] = s
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
