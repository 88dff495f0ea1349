package respire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/testserver"
)

// withoutCommands makes c use a table lacking names, as if its server had a command no
// table knows. It is set before the client is used.
func withoutCommands(c *Client, names ...string) { c.table = command.Default.Without(names...) }

// A command removed from the table is resolved with one COMMAND INFO and then prefixed
// like any other; a command the server does not know either is refused before it is
// sent, and that answer is remembered too.
func TestCommandInfoResolution(t *testing.T) {
	users := []testserver.User{{Name: "noinfo", Password: "pw", Rules: []string{"+@all", "-command", "~*"}}}
	srv := testserver.Start(t, testserver.Config{Users: users})
	emu := emulator.Start(t, emulator.Config{Backend: srv.Addr(), Profile: emulator.Redis7})
	ctx := context.Background()

	t.Run("learned", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:"})
		withoutCommands(c, "getdel", "copy")
		if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := c.Do(ctx, "COPY", "k", "k2"); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Do(ctx, "GETDEL", "k2"); err != nil || text(v) != "v" {
				t.Fatalf("GETDEL = %v, %v", v, err)
			}
		}
		if got := srv.Do(t, "GET", "app:k"); got != "v" {
			t.Fatalf("app:k holds %q", got)
		}
		if got := srv.Do(t, "EXISTS", "k2", "app:k2", "k"); got != "0" {
			t.Fatalf("an unprefixed or undeleted key exists: EXISTS = %s", got)
		}
		if n := emu.Count("COMMAND INFO"); n != 2 {
			t.Fatalf("COMMAND INFO sent %d times, want once per command", n)
		}
		// A pipeline uses what Do learned.
		res, err := c.Pipeline().Do("COPY", "k", "k3").Do("GETDEL", "k3").Exec(ctx)
		if err != nil || text(res[1].Value) != "v" {
			t.Fatalf("pipeline: %v, %v", res, err)
		}
	})

	t.Run("subcommand", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:"})
		withoutCommands(c, "object|encoding")
		srv.Do(t, "RPUSH", "app:list", "a")
		for range 2 {
			if v, err := c.Do(ctx, "OBJECT", "ENCODING", "list"); err != nil || text(v) != "listpack" && text(v) != "quicklist" {
				t.Fatalf("OBJECT ENCODING of the prefixed list = %v, %v", v, err)
			}
		}
		if n := emu.Count("COMMAND INFO"); n != 1 {
			t.Fatalf("COMMAND INFO sent %d times, want once", n)
		}
		_, err := c.Do(ctx, "OBJECT", "NOSUCHSUB", "list")
		if !errors.Is(err, ErrUnknownKeys) || !strings.Contains(err.Error(), "OBJECT|NOSUCHSUB") {
			t.Fatalf("OBJECT NOSUCHSUB: %v", err)
		}
		if n := emu.Count("OBJECT NOSUCHSUB"); n != 0 {
			t.Fatalf("OBJECT NOSUCHSUB was sent")
		}
	})

	t.Run("unknown everywhere", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:"})
		for range 2 {
			_, err := c.Do(ctx, "NOSUCHCMD", "k")
			if !errors.Is(err, ErrUnknownKeys) || !strings.Contains(err.Error(), "NOSUCHCMD") {
				t.Fatalf("NOSUCHCMD: %v", err)
			}
		}
		if _, err := c.DoMulti(ctx, []any{"GET", "k"}, []any{"nosuchcmd", "k"}); !errors.Is(err, ErrUnknownKeys) {
			t.Fatalf("DoMulti: %v", err)
		}
		if n := emu.Count("NOSUCHCMD"); n != 0 {
			t.Fatalf("NOSUCHCMD was sent %d times", n)
		}
		if n := emu.Count("COMMAND INFO"); n != 1 {
			t.Fatalf("COMMAND INFO sent %d times, want once", n)
		}
	})

	// A Pipeline's Do cannot ask, having no context: Exec asks, then prefixes it.
	t.Run("pipeline before resolution", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:"})
		withoutCommands(c, "getdel")
		res, err := c.Pipeline().Do("SET", "p", "v").Do("GETDEL", "p").Exec(ctx)
		if err != nil || len(res) != 2 || res[1].Err != nil || text(res[1].Value) != "v" {
			t.Fatalf("pipeline: %+v, %v", res, err)
		}
		if got := srv.Do(t, "EXISTS", "app:p", "p"); got != "0" {
			t.Fatalf("GETDEL missed the prefixed key: EXISTS = %s", got)
		}
		if n := emu.Count("COMMAND INFO"); n != 1 {
			t.Fatalf("COMMAND INFO sent %d times, want once", n)
		}
	})

	t.Run("COMMAND INFO refused", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}, KeyPrefix: "app:", Username: "noinfo", Password: "pw"})
		withoutCommands(c, "getdel")
		_, err := c.Do(ctx, "GETDEL", "k")
		if !errors.Is(err, ErrUnknownKeys) || !strings.Contains(err.Error(), "GETDEL") || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("GETDEL without COMMAND INFO: %v", err)
		}
		if n := emu.Count("GETDEL"); n != 0 {
			t.Fatalf("GETDEL was sent %d times", n)
		}
	})

	t.Run("no keys needed", func(t *testing.T) {
		emu.Reset()
		c := newClientT(t, Options{Addrs: []string{emu.Addr()}})
		withoutCommands(c, "getdel")
		srv.Do(t, "SET", "plain", "v")
		if v, err := c.Do(ctx, "GETDEL", "plain"); err != nil || text(v) != "v" {
			t.Fatalf("GETDEL = %v, %v", v, err)
		}
		if n := emu.Count("COMMAND INFO"); n != 0 {
			t.Fatalf("COMMAND INFO asked %d times without a prefix", n)
		}
	})
}

// On a Cluster, a command removed from the table goes to the node that owns its key,
// learned from COMMAND INFO, never to another; an unknown one goes nowhere.
func TestCommandInfoClusterRouting(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	emus := emulator.StartCluster(t, cl.Seeds(), nil)
	byBackend := map[string]*emulator.Emulator{}
	for i, n := range cl.Nodes() {
		byBackend[n.Addr()] = emus[i]
	}
	ctx := context.Background()
	c := newClientT(t, Options{Addrs: []string{emus[0].Addr()}, Cluster: true})
	withoutCommands(c, "getdel")
	for _, k := range clusterserver.SampleKeys(12, "ci:") {
		if _, err := c.Do(ctx, "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
		for _, e := range emus {
			e.Reset()
		}
		if v, err := c.Do(ctx, "GETDEL", k); err != nil || text(v) != "v" {
			t.Fatalf("GETDEL %s = %v, %v", k, v, err)
		}
		owner := byBackend[cl.MasterOf(t, cluster.Slot(k)).Addr()]
		for _, e := range emus {
			want := int64(0)
			if e == owner {
				want = 1
			}
			if got := e.Count("GETDEL"); got != want {
				t.Fatalf("GETDEL %s reached %s %d times, want %d (no MOVED detour)", k, e.Addr(), got, want)
			}
		}
	}
	if _, err := c.Do(ctx, "NOSUCHCMD", "k"); !errors.Is(err, ErrUnknownKeys) {
		t.Fatalf("NOSUCHCMD on a Cluster: %v", err)
	}
	for _, e := range emus {
		if n := e.Count("NOSUCHCMD"); n != 0 {
			t.Fatalf("NOSUCHCMD reached %s", e.Addr())
		}
	}
}
