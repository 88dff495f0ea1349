package conn

import (
	"context"
	"testing"

	"github.com/respire/respire/test/testserver"
)

// DoEncodedInto collects into the caller's slice when it has room for every reply, so
// a caller sending batch after batch reuses one, and into a new one otherwise; on a
// quiet connection and under a context that can end alike.
func TestDoEncodedInto(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{})
	payload := encodeAll(t, []any{"SET", "into:k", "v"}, []any{"GET", "into:k"})
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cancellable} {
		room := make([]Result, 0, 2)
		res, err := c.DoEncodedInto(ctx, 2, payload, room)
		if err != nil || len(res) != 2 || res[1].Value.String() != `"v"` {
			t.Fatalf("DoEncodedInto: %v %v", res, err)
		}
		if &res[0] != &room[:1][0] {
			t.Error("the results are not in the slice given, which had room for them")
		}
		small := make([]Result, 0, 1)
		res, err = c.DoEncodedInto(ctx, 2, payload, small)
		if err != nil || len(res) != 2 || res[1].Value.String() != `"v"` {
			t.Fatalf("DoEncodedInto with too small a slice: %v %v", res, err)
		}
		if &res[0] == &small[:1][0] {
			t.Error("the results went into a slice too small for them")
		}
	}
}
