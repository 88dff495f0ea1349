package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// A client with a Logger logs a killed connection and its reconnection, with the
// server's address and without the password.
func TestLoggerReconnect(t *testing.T) {
	const password = "log-test-secret"
	srv := testserver.Start(t, testserver.Config{RequirePass: password})
	h := &testkit.LogRecorder{}
	c := testclient.At(t, srv.Addr(), respire.Options{Password: password, Logger: slog.New(h)})
	ctx := context.Background()
	id, err := c.Do(ctx, "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := id.Int()
	if got := h.Lines(); len(got) != 0 {
		t.Fatalf("lines before any loss: %q", got)
	}
	srv.Do(t, "CLIENT", "KILL", "ID", fmt.Sprint(n))
	testkit.WaitFor(t, "the reconnect line", func() bool {
		c.Do(ctx, "PING") // the first may fail with the lost connection
		for _, l := range h.Lines() {
			if strings.HasPrefix(l, "INFO respire: reconnected ") {
				return true
			}
		}
		return false
	})
	lines := h.Lines()
	if !strings.HasPrefix(lines[0], "WARN respire: connection lost addr="+srv.Addr()+" err=") {
		t.Errorf("first line %q, want the loss of the connection to %s", lines[0], srv.Addr())
	}
	if want := "INFO respire: reconnected addr=" + srv.Addr() + " duration="; !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("last line %q, want %q...", lines[len(lines)-1], want)
	}
	for _, l := range lines {
		if strings.Contains(l, password) {
			t.Errorf("a line holds the password: %q", l)
		}
	}
	t.Logf("lines: %q", lines)
}
