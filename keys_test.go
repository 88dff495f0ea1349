package respire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/sentinelserver"
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

// A command the table lacks, added to a Cluster Pipeline before COMMAND INFO was asked
// about it, is resolved at Exec and goes to the node that owns its key, in its place
// in the batch; a command nobody knows, or a blocking one behind it, fails Exec with
// nothing sent.
func TestClusterPipelineResolvesUnknownCommands(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	emus := emulator.StartCluster(t, cl.Seeds(), nil)
	byBackend := map[string]*emulator.Emulator{}
	for i, n := range cl.Nodes() {
		byBackend[n.Addr()] = emus[i]
	}
	ctx := clusterTestContext(t)
	reset := func() {
		for _, e := range emus {
			e.Reset()
		}
	}

	t.Run("resolved at Exec", func(t *testing.T) {
		c := newClientT(t, Options{Addrs: []string{emus[0].Addr()}, Cluster: true})
		withoutCommands(c, "getdel")
		keys := clusterserver.SampleKeys(6, "pci:")
		p := c.Pipeline()
		for i, k := range keys {
			p.Do("SET", k, fmt.Sprint("v", i)).Do("GETDEL", k).Do("EXISTS", k)
		}
		reset()
		res, err := p.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3*len(keys) {
			t.Fatalf("%d results for %d commands", len(res), 3*len(keys))
		}
		for i, k := range keys {
			set, getdel, exists := res[3*i], res[3*i+1], res[3*i+2]
			if set.Err != nil || getdel.Err != nil || text(getdel.Value) != fmt.Sprint("v", i) || exists.Value.String() != "0" {
				t.Fatalf("key %s: SET %v %v, GETDEL %v %v, EXISTS %v %v", k, set.Value, set.Err, getdel.Value, getdel.Err, exists.Value, exists.Err)
			}
		}
		var asked int64
		for _, e := range emus {
			asked += e.Count("COMMAND INFO")
		}
		if asked != 1 {
			t.Errorf("COMMAND INFO asked %d times, want once", asked)
		}
		for _, k := range keys {
			owner := byBackend[cl.MasterOf(t, cluster.Slot(k)).Addr()]
			if owner.Count("GETDEL") == 0 {
				t.Errorf("GETDEL %s did not reach the owner %s", k, owner.Addr())
			}
		}
		var moved int64
		for _, e := range emus {
			moved += e.Count("GETDEL")
		}
		if moved != int64(len(keys)) {
			t.Errorf("GETDEL sent %d times for %d keys: a detour by MOVED", moved, len(keys))
		}
	})

	for _, tt := range []struct {
		name    string
		cmds    [][]any
		wantErr error
	}{
		{"unknown to the server", [][]any{{"SET", "pci:x", "1"}, {"NOSUCHCMD", "pci:x"}, {"GET", "pci:x"}}, ErrUnknownKeys},
		{"blocking after an unresolved one", [][]any{{"SET", "pci:x", "1"}, {"GETDEL", "pci:x"}, {"BLPOP", "pci:l", 0}}, ErrBlockingInBatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClientT(t, Options{Addrs: []string{emus[0].Addr()}, Cluster: true})
			withoutCommands(c, "getdel")
			p := c.Pipeline()
			for _, cmd := range tt.cmds {
				p.Do(cmd...)
			}
			reset()
			if _, err := p.Exec(ctx); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Exec: %v; want %v", err, tt.wantErr)
			}
			for _, e := range emus {
				for _, name := range []string{"SET", "GETDEL", "NOSUCHCMD", "BLPOP"} {
					if n := e.Count(name); n != 0 {
						t.Errorf("%s reached %s %d times", name, e.Addr(), n)
					}
				}
			}
			if p.Len() != 0 {
				t.Errorf("the pipeline holds %d commands after Exec", p.Len())
			}
		})
	}
}

// The client and its router agree on whether a command is read-only, from the one
// entry the client looked up: MYGET, GET renamed on the servers, is a command the
// default table does not know, which the client learns from COMMAND INFO (a key prefix
// needs its keys) as a read; with replica reads on it is then read from the replica,
// where the router once took it for a write and sent it to the master.
func TestLearnedReadOnlyCommandReadsFromReplica(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1,
		NodeArgs: []string{"--rename-command", "GET", "MYGET"}})
	ctx := context.Background()
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(),
		ReplicaReads: true, KeyPrefix: "app:", Observer: rec})
	master := d.MasterAddr(t)
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	// The Monitor names the replica in its own time: poll until a read goes there.
	testkit.WaitFor(t, "MYGET read from the replica", func() bool {
		if _, err := c.Do(ctx, "MYGET", "k"); err != nil {
			t.Fatalf("MYGET: %v", err)
		}
		return rec.lastEnd(t).Addr != master
	})
	// Learned now: the start event expects the replica the router sends it to.
	if _, err := c.Do(ctx, "MYGET", "k"); err != nil {
		t.Fatalf("MYGET: %v", err)
	}
	end := rec.lastEnd(t)
	rec.mu.Lock()
	start := rec.starts[len(rec.starts)-1]
	rec.mu.Unlock()
	if end.Addr == master || start.Addr != end.Addr {
		t.Errorf("MYGET was expected on %q and answered by %q (the master is %s)", start.Addr, end.Addr, master)
	}
}

// namedGet is GET as a typed command sends it: a name that carries its table entry.
func namedGet(t *testing.T) *argkind.Name {
	info, ok := command.Lookup("get")
	if !ok {
		t.Fatal("GET is not in the table")
	}
	return &argkind.Name{Text: "GET", Entry: info}
}

// A command whose name carries its entry (*argkind.Name, as typed commands send it)
// runs on every path as its text would: Do, DoCached, DoMulti, a Pipeline, a
// transaction, a Cluster client with a key prefix, and an observer names it by its
// entry.
func TestNamedCommandOnEveryPath(t *testing.T) {
	ctx := context.Background()
	srv := testserver.Start(t, testserver.Config{})
	srv.Do(t, "SET", "app:k", "v")
	get := namedGet(t)
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app:", Observer: rec,
		ClientSideCache: &cache.Options{}})

	want := func(what string, s string, err error) {
		t.Helper()
		if err != nil || s != "v" {
			t.Errorf("%s: %q, %v; want v", what, s, err)
		}
	}
	v, err := c.Do(ctx, get, "k")
	want("Do", text(v), err)
	if e := rec.lastEnd(t); e.Name != "GET" {
		t.Errorf("the observer named it %q, want GET", e.Name)
	}
	for range 2 {
		v, err = c.DoCached(ctx, time.Minute, get, "k")
		want("DoCached", text(v), err)
	}
	if st := c.CacheStats(); st.Hits != 1 {
		t.Errorf("cache stats %+v; want the second DoCached a hit", st)
	}
	res, err := c.DoMulti(ctx, []any{get, "k"}, []any{"GET", "k"})
	if err == nil {
		want("DoMulti", text(res[0].Value), res[0].Err)
	} else {
		t.Errorf("DoMulti: %v", err)
	}
	res, err = c.Pipeline().Do(get, "k").Exec(ctx)
	if err == nil {
		want("Pipeline", text(res[0].Value), res[0].Err)
	} else {
		t.Errorf("Pipeline: %v", err)
	}
	err = c.Watch(ctx, func(tx *Tx) error {
		v, err := tx.Do(ctx, get, "k")
		want("Tx.Do", text(v), err)
		res, err := tx.Exec(ctx, []any{get, "k"})
		if err != nil {
			return err
		}
		want("Tx.Exec", text(res[0].Value), res[0].Err)
		return nil
	}, "k")
	if err != nil {
		t.Errorf("Watch: %v", err)
	}

	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	cc := newClientT(t, Options{Addrs: cl.Seeds(), Cluster: true, KeyPrefix: "app:"})
	for _, key := range []string{"k", "other", "{x}y"} {
		if _, err := cc.Do(ctx, "SET", key, "v"); err != nil {
			t.Fatal(err)
		}
		v, err := cc.Do(ctx, get, key)
		want("Cluster Do "+key, text(v), err)
	}
	res, err = cc.DoMulti(ctx, []any{get, "k"}, []any{get, "other"})
	if err != nil {
		t.Fatalf("Cluster DoMulti: %v", err)
	}
	want("Cluster DoMulti", text(res[1].Value), res[1].Err)
}
