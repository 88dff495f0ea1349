package respire

import (
	"context"
	"fmt"
	"testing"

	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// TestMain starts one server for the runnable examples (tests start their own) and
// checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { testserver.ExamplesMain(m) }

// The tests here are the ones that need the client's internals; those that need only
// its exported API are in test/integration, whose helpers these mirror. (An in-package
// test cannot import testkit/testclient, which imports this package.)

var protocols = []int{2, 3}

func newClientT(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := NewClient(context.Background(), opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func forEachProtocol(t *testing.T, srv *testserver.Server, opts Options, fn func(t *testing.T, c *Client)) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			o := opts
			o.Addrs = []string{srv.Addr()}
			o.Protocol = proto
			fn(t, newClientT(t, o))
		})
	}
}

// text is v's text, or "" when it has none.
func text(v resp.Value) string {
	s, _ := v.Text()
	return s
}
