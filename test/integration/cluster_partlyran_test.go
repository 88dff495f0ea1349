package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestClusterPartlyRunIsOutcomeUnknownLive sends a DoMulti split over two masters of a
// real cluster, one of them killed just before: the live part runs, the other fails.
// The batch as a whole may have run, so its error matches conn.ErrOutcomeUnknown and
// conn.WasWritten, never conn.ErrNotSent (which would tell the caller it may send it
// all again, repeating the part that ran), and the live part's write is on its node.
//
// The live masters are told not to require full coverage, so that they keep serving
// their slots once they have failed the killed one.
func TestClusterPartlyRunIsOutcomeUnknownLive(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{
		NoReplicas: true,
		Server:     testserver.Config{Args: []string{"--cluster-require-full-coverage", "no"}},
	})
	c := clusterClient(t, cl, respire.Options{DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	masters := cl.Masters(t)
	if len(masters) < 2 {
		t.Fatalf("%d masters, want at least 2", len(masters))
	}
	live, dead := keyOn(t, cl, masters[0], "partly:live:"), keyOn(t, cl, masters[1], "partly:dead:")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both nodes are known to the client and connected before one dies.
	if _, err := c.DoMulti(ctx, []any{"SET", live, "before"}, []any{"SET", dead, "before"}); err != nil {
		t.Fatalf("DoMulti before the kill: %v", err)
	}
	masters[1].Kill(t)

	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := c.DoMulti(bctx, []any{"SET", live, "after"}, []any{"SET", dead, "after"})
	bcancel()
	if err == nil {
		t.Fatal("DoMulti with one part on a killed master: no error")
	}
	t.Logf("DoMulti with one part on a killed master: %v", err)
	if !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Errorf("partly run DoMulti: %v, want conn.ErrOutcomeUnknown", err)
	}
	if errors.Is(err, conn.ErrNotSent) {
		t.Errorf("partly run DoMulti: %v matches conn.ErrNotSent, but its live part ran", err)
	}
	if !conn.WasWritten(err) {
		t.Errorf("partly run DoMulti: conn.WasWritten(%v) = false, want true", err)
	}
	if got := owner(t, cl, live); got != "after" {
		t.Errorf("%s on its live master = %q, want %q: the live part did not run", live, got, "after")
	}
}

// keyOn returns a key with the given stem in a slot that master serves. It looks at
// every 256th slot only, since each look asks the cluster: a master's range is far
// wider than that.
func keyOn(t *testing.T, cl *clusterserver.Cluster, master *clusterserver.Node, stem string) string {
	t.Helper()
	for slot := 0; slot < cluster.SlotCount; slot += 256 {
		if cl.MasterOf(t, slot) == master {
			return clusterserver.KeyIn(slot, stem)
		}
	}
	t.Fatalf("%s serves no slot", master.Addr())
	return ""
}
