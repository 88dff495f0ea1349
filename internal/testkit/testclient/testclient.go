// Package testclient is the test kit's client constructor, apart from package testkit
// because the client's own packages use testkit and cannot import the client.
package testclient

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
)

// connectTimeout bounds NewClient, so that a server that never answers the handshake
// fails the test instead of hanging it.
const connectTimeout = 30 * time.Second

// New connects a client with opts, failing the test if it cannot, and closes the client
// when the test ends.
func New(tb testing.TB, opts respire.Options) *respire.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		tb.Fatalf("connect to %v: %v", opts.Addrs, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// At is New with addr as the only address.
func At(tb testing.TB, addr string, opts respire.Options) *respire.Client {
	tb.Helper()
	opts.Addrs = []string{addr}
	return New(tb, opts)
}
