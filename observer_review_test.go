package respire

import (
	"context"
	"fmt"
	"testing"

	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// Each round trip of Scan is a command the observer sees, as HScan's are: named SCAN,
// with the server's address.
func TestObserverScan(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for i := range 30 {
		srv.Do(t, "SET", fmt.Sprintf("scan:%d", i), "v")
	}
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	n := 0
	for _, err := range c.Scan(context.Background(), ScanOptions{Count: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("Scan yielded %d keys, want 30", n)
	}
	rec.lastEnd(t) // every start ended
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ends) < 2 {
		t.Errorf("%d CommandEnd events for a Scan of 30 keys by 5, want one a round trip", len(rec.ends))
	}
	for _, e := range rec.ends {
		if e.Name != "SCAN" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
			t.Errorf("CommandEnd %+v, want SCAN on %s, ok", e, srv.Addr())
		}
	}
}
