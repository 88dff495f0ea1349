package respire

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestDialRefusedErrorText: a refused dial at start-up sent no command, and its text
// says only what the dial said ("dial" once); a command that finds its server gone says
// it was not sent, then the same. Both still match conn.ErrNotSent.
func TestDialRefusedErrorText(t *testing.T) {
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	_, err := NewClient(ctx, Options{Addrs: []string{addr}, DialTimeout: time.Second})
	want := "conn: dial tcp " + addr + ": connect: connection refused"
	if err == nil || err.Error() != want {
		t.Fatalf("NewClient: %v\nwant %s", err, want)
	}
	if !errors.Is(err, conn.ErrNotSent) || conn.WasWritten(err) {
		t.Fatalf("NewClient: %v no longer says nothing was sent", err)
	}

	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, DialTimeout: time.Second})
	srv.Kill(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = c.Do(ctx, "PING")
		if errors.Is(err, conn.ErrNotSent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PING to a killed server: %v, never not sent", err)
		}
	}
	want = "conn: command not sent: dial tcp " + srv.Addr() + ": connect: connection refused"
	if err.Error() != want {
		t.Fatalf("PING: %v\nwant %s", err, want)
	}
}

// TestCrossSlotErrorNamesLongCommands: the cross-slot error names the command however
// long its name (GEOSEARCHSTORE was "command").
func TestCrossSlotErrorNamesLongCommands(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{})
	ctx := clusterTestContext(t)
	c := clusterClient(t, cl, Options{})
	dst, src := keyIn(1, "dst"), keyIn(2, "src")
	_, err := c.Do(ctx, "geosearchstore", dst, src, "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km")
	want := fmt.Sprintf("respire: keys in different cluster slots: the keys of GEOSEARCHSTORE hash to slots %d and %d; use a {hash tag} to keep them together",
		cluster.Slot(dst), cluster.Slot(src))
	if !errors.Is(err, ErrCrossSlot) || err.Error() != want {
		t.Fatalf("GEOSEARCHSTORE across slots: %v\nwant %s", err, want)
	}
}
