package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// TestDialRefusedErrorText: a refused dial at start-up sent no command, and its text
// says only what the dial said ("dial" once); a command that finds its server gone says
// it was not sent, then the same. Both still match conn.ErrNotSent.
func TestDialRefusedErrorText(t *testing.T) {
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", testserver.FreePort(t))
	_, err := respire.NewClient(ctx, respire.Options{Addrs: []string{addr}, DialTimeout: time.Second})
	want := "conn: dial tcp " + addr + ": connect: connection refused"
	if err == nil || err.Error() != want {
		t.Fatalf("NewClient: %v\nwant %s", err, want)
	}
	if !errors.Is(err, conn.ErrNotSent) || conn.WasWritten(err) {
		t.Fatalf("NewClient: %v no longer says nothing was sent", err)
	}

	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, DialTimeout: time.Second})
	srv.Kill(t)
	err = pingUntilNotSent(t, c)
	want = "conn: command not sent: dial tcp " + srv.Addr() + ": connect: connection refused"
	if err.Error() != want {
		t.Fatalf("PING: %v\nwant %s", err, want)
	}
	// A blocking command dials a dedicated connection through the pool, which adds
	// nothing to the dial's own words.
	_, err = c.Do(ctx, "BLPOP", "k", 1)
	if !errors.Is(err, conn.ErrNotSent) || err.Error() != want {
		t.Fatalf("BLPOP: %v\nwant %s", err, want)
	}
}

// pingUntilNotSent sends PING on c, whose server was killed, until the error says
// that it was not sent (the first may find the old connection broken), and returns
// that error.
func pingUntilNotSent(t *testing.T, c *respire.Client) error {
	t.Helper()
	var err error
	testkit.WaitWithin(t, 30*time.Second, "PING to a killed server to be not sent", func() error {
		_, err = c.Do(context.Background(), "PING")
		if errors.Is(err, conn.ErrNotSent) {
			return nil
		}
		return fmt.Errorf("PING: %v", err)
	})
	return err
}

// TestHandshakeErrorText: a server that closes the connection during the handshake
// fails NewClient with the handshake's cause, not with "command outcome unknown": the
// caller sent no command.
func TestHandshakeErrorText(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { ln.Close() })
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			// Read the handshake's first command, then hang up without a reply.
			nc.Read(make([]byte, 64<<10))
			nc.Close()
		}
	})
	addr := ln.Addr().String()
	_, err = respire.NewClient(context.Background(), respire.Options{Addrs: []string{addr}, DialTimeout: 5 * time.Second})
	want := "conn: handshake with " + addr + ": EOF"
	if err == nil || err.Error() != want {
		t.Fatalf("NewClient: %v\nwant %s", err, want)
	}
	var ce *conn.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("NewClient: %v no longer wraps the handshake's *conn.CallError", err)
	}
}

// TestCacheOptionsErrorText: unusable Options.ClientSideCache says "invalid options"
// once, and matches both packages' sentinels.
func TestCacheOptionsErrorText(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	_, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{MaxEntries: -1}})
	want := "respire: invalid options: ClientSideCache: MaxEntries -1 is negative"
	if err == nil || err.Error() != want {
		t.Fatalf("NewClient: %v\nwant %s", err, want)
	}
	if !errors.Is(err, respire.ErrInvalidOptions) || !errors.Is(err, cache.ErrInvalidOptions) {
		t.Fatalf("NewClient: %v does not match both ErrInvalidOptions", err)
	}
}

// TestSentinelMasterErrorText: a command for a Sentinel-named master that refuses
// connections names the master and the dial once (the address was given twice).
func TestSentinelMasterErrorText(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: -1, Sentinels: 1})
	ctx := context.Background()
	c := testclient.New(t, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(), DialTimeout: time.Second})
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	master := d.KillMaster(t)
	err := pingUntilNotSent(t, c)
	want := fmt.Sprintf("conn: command not sent: respire: master %q: conn: dial tcp %s: connect: connection refused", d.MasterName(), master.Addr())
	if err.Error() != want {
		t.Fatalf("PING: %v\nwant %s", err, want)
	}
}

// TestCrossSlotErrorNamesLongCommands: the cross-slot error names the command however
// long its name (GEOSEARCHSTORE was "command"), and whatever string or []byte kind
// carries it (a named string type was "command" too).
func TestCrossSlotErrorNamesLongCommands(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{})
	ctx := clusterTestContext(t)
	c := clusterClient(t, cl, respire.Options{})
	dst, src := clusterserver.KeyIn(1, "dst"), clusterserver.KeyIn(2, "src")
	want := fmt.Sprintf("respire: keys in different cluster slots: the keys of GEOSEARCHSTORE hash to slots %d and %d; use a {hash tag} to keep them together",
		cluster.Slot(dst), cluster.Slot(src))
	type commandName string
	for _, name := range []any{"geosearchstore", []byte("geosearchstore"), commandName("geosearchstore")} {
		_, err := c.Do(ctx, name, dst, src, "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km")
		if !errors.Is(err, respire.ErrCrossSlot) || err.Error() != want {
			t.Errorf("GEOSEARCHSTORE (a %T) across slots: %v\nwant %s", name, err, want)
		}
	}
}

// TestUnknownKeysErrorText: a command neither the table nor the server knows, refused
// for want of its key positions, says so without an internal marker's words.
func TestUnknownKeysErrorText(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app:"})
	_, err := c.Do(context.Background(), "nosuchcmd", "k")
	want := "respire: key positions of the command unknown: NOSUCHCMD is in neither the client's command table nor the server's COMMAND INFO"
	if !errors.Is(err, respire.ErrUnknownKeys) || err.Error() != want {
		t.Fatalf("NOSUCHCMD: %v\nwant %s", err, want)
	}
}
