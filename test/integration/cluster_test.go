package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestCluster runs the behaviours that leave the topology as it is on one cluster.
func TestCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{})
	ctx := clusterTestContext(t)

	t.Run("CommandShapes", func(t *testing.T) {
		for _, proto := range protocols {
			t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
				c := clusterClient(t, cl, respire.Options{Protocol: proto})
				keys := clusterserver.SampleKeys(96, fmt.Sprintf("shape%d:", proto))
				hit := map[string]bool{}
				for _, k := range keys {
					hit[cl.MasterOf(t, cluster.Slot(k)).ID] = true
				}
				if len(hit) != 3 {
					t.Fatalf("sample keys hit %d masters, want 3", len(hit))
				}
				for i, k := range keys {
					clusterShapes(t, ctx, c, k, i)
				}
				for _, k := range keys[:12] {
					if got := owner(t, cl, k); got != "v:"+k {
						t.Fatalf("owner of %s has %q", k, got)
					}
				}
			})
		}
	})

	t.Run("HashTags", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{})
		for i := range 30 {
			tag := fmt.Sprintf("{user:%d}", i)
			a, b := tag+":cart", tag+":orders"
			if cluster.Slot(a) != cluster.Slot(b) {
				t.Fatalf("%s and %s in different slots", a, b)
			}
			if _, err := c.Do(ctx, "MSET", a, "1", b, "2"); err != nil {
				t.Fatalf("MSET %s %s: %v", a, b, err)
			}
			node := cl.MasterOf(t, cluster.Slot(a))
			if node.Do(t, "GET", a) != "1" || node.Do(t, "GET", b) != "2" {
				t.Fatalf("%s and %s are not both on %s", a, b, node.Addr())
			}
			if v, err := c.Do(ctx, "SUNIONSTORE", tag+":u", tag+":s1", tag+":s2"); err != nil || v.Len() != 0 {
				// A multi-key write with tagged keys runs where its tag lives.
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("CrossSlot", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{})
		a, b := clusterserver.KeyIn(1, "x"), clusterserver.KeyIn(9000, "x")
		_, err := c.Do(ctx, "MSET", a, "1", b, "2")
		if !errors.Is(err, respire.ErrCrossSlot) || !strings.Contains(err.Error(), "slots 1 and 9000") || !strings.Contains(err.Error(), "MSET") {
			t.Fatalf("MSET across slots: %v, want ErrCrossSlot naming MSET and slots 1 and 9000", err)
		}
		if v := owner(t, cl, a); v != "(nil)" {
			t.Fatalf("%s was written (%q): the command must not be sent", a, v)
		}
		if _, err := c.Do(ctx, "EVAL", "return 1", 2, a, b); !errors.Is(err, respire.ErrCrossSlot) {
			t.Fatalf("EVAL with keys across slots: %v", err)
		}
		if _, err := c.DoMulti(ctx, []any{"SET", a, 1}, []any{"DEL", a, b}); !errors.Is(err, respire.ErrCrossSlot) || !strings.Contains(err.Error(), "command 1") {
			t.Fatalf("DoMulti with a cross-slot member: %v", err)
		}
		if v := owner(t, cl, a); v != "(nil)" {
			t.Fatalf("the batch was partly sent: %s = %q", a, v)
		}
		err = c.Watch(ctx, func(tx *respire.Tx) error { return nil }, a, b)
		if !errors.Is(err, respire.ErrCrossSlot) {
			t.Fatalf("Watch across slots: %v", err)
		}
		err = c.Watch(ctx, func(tx *respire.Tx) error {
			_, err := tx.Exec(ctx, []any{"SET", a, 1}, []any{"SET", b, 2})
			return err
		}, a)
		if !errors.Is(err, respire.ErrCrossSlot) {
			t.Fatalf("a transaction writing another slot: %v", err)
		}
		// Shard channels pick a slot like keys.
		if _, err := c.Do(ctx, "SPUBLISH", a, "m"); err != nil {
			t.Fatalf("SPUBLISH: %v", err)
		}
	})

	t.Run("PipelineInCallerOrder", func(t *testing.T) {
		for _, prefix := range []string{"", "p:"} {
			c := clusterClient(t, cl, respire.Options{KeyPrefix: prefix})
			keys := clusterserver.SampleKeys(150, "pipe"+prefix)
			var cmds [][]any
			for i, k := range keys {
				cmds = append(cmds, []any{"SET", k, i}, []any{"INCR", k}, []any{"GET", k})
			}
			cmds = append(cmds, []any{"PING"})
			res, err := c.DoMulti(ctx, cmds...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range keys {
				r := res[3*i+2]
				if n, err := r.Value.Int(); r.Err != nil || err != nil || n != int64(i+1) {
					t.Fatalf("prefix %q: GET %s = %v %v, want %d", prefix, keys[i], r.Value, r.Err, i+1)
				}
			}
			if s, _ := res[len(res)-1].Value.Text(); s != "PONG" {
				t.Fatalf("PING in the batch: %v", res[len(res)-1])
			}
			if got := cl.MasterOf(t, cluster.Slot(prefix+keys[7])).Do(t, "GET", prefix+keys[7]); got != "8" {
				t.Fatalf("prefix %q: owner has %q", prefix, got)
			}
			p := c.Pipeline()
			for _, k := range keys[:20] {
				p.Do("DEL", k)
			}
			res, err = p.Exec(ctx)
			if err != nil || len(res) != 20 {
				t.Fatalf("Pipeline.Exec: %d results, %v", len(res), err)
			}
			for i, r := range res {
				if n, _ := r.Value.Int(); n != 1 {
					t.Fatalf("DEL %s = %v %v", keys[i], r.Value, r.Err)
				}
			}
		}
	})

	t.Run("Watch", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{})
		for _, slot := range []int{10, 8000, 16000} {
			tag := "{" + clusterserver.KeyIn(slot, "w") + "}"
			k1, k2 := tag+":balance", tag+":log"
			err := c.Watch(ctx, func(tx *respire.Tx) error {
				v, err := tx.Do(ctx, "GET", k1)
				if err != nil {
					return err
				}
				n, _ := v.Int()
				_, err = tx.Exec(ctx, []any{"SET", k1, n + 10}, []any{"RPUSH", k2, "+10"})
				return err
			}, k1, k2)
			if err != nil {
				t.Fatalf("slot of %s: %v", k1, err)
			}
			if got := owner(t, cl, k1); got != "10" {
				t.Fatalf("%s = %q", k1, got)
			}
			// A watched key changed by someone else: nothing runs.
			err = c.Watch(ctx, func(tx *respire.Tx) error {
				if _, err := c.Do(ctx, "SET", k1, "changed"); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, []any{"SET", k1, "mine"})
				return err
			}, k1)
			if !errors.Is(err, respire.ErrTxFailed) {
				t.Fatalf("Watch after a concurrent change: %v", err)
			}
			// No watched key: the first command picks the node.
			err = c.Watch(ctx, func(tx *respire.Tx) error {
				_, err := tx.Exec(ctx, []any{"SET", k2 + "x", 1}, []any{"INCR", k2 + "x"})
				return err
			})
			if err != nil {
				t.Fatalf("transaction without watched keys: %v", err)
			}
		}
	})

	t.Run("KeyPrefix", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{KeyPrefix: "tenant:"})
		keys := clusterserver.SampleKeys(30, "kp")
		for _, k := range keys {
			if _, err := c.Do(ctx, "SET", k, "v"); err != nil {
				t.Fatalf("SET %s: %v", k, err)
			}
			// Routed by the prefixed key's slot, which is where the server keeps it.
			if got := owner(t, cl, "tenant:"+k); got != "v" {
				t.Fatalf("tenant:%s on its owner = %q", k, got)
			}
		}
		tagged := clusterClient(t, cl, respire.Options{KeyPrefix: "{tenant}:"})
		if _, err := tagged.Do(ctx, "MSET", keys[0], 1, keys[1], 2); err != nil {
			t.Fatalf("a {tag} prefix puts every key in one slot: %v", err)
		}
	})

	// A command's start event names the master its prefixed key's slot is on, before
	// it is sent (issue #24 point 6: samplers read server.address at the start).
	t.Run("ObserverStartAddr", func(t *testing.T) {
		rec := &recorder{}
		c := clusterClient(t, cl, respire.Options{KeyPrefix: "tenant:", Observer: rec})
		for _, k := range clusterserver.SampleKeys(12, "sa") {
			if _, err := c.Do(ctx, "GET", k); err != nil {
				t.Fatal(err)
			}
			want := cl.MasterOf(t, cluster.Slot("tenant:"+k)).Addr()
			rec.mu.Lock()
			got := rec.starts[len(rec.starts)-1]
			rec.mu.Unlock()
			if got.Name != "GET" || got.Addr != want {
				t.Errorf("GET %s started for %q, want %q", k, got.Addr, want)
			}
		}
	})

	t.Run("ScanAndFanout", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{KeyPrefix: "scan:"})
		keys := clusterserver.SampleKeys(90, "k")
		for _, k := range keys {
			if _, err := c.Do(ctx, "SET", k, 1); err != nil {
				t.Fatal(err)
			}
		}
		var seen []string
		for k, err := range c.Scan(ctx, respire.ScanOptions{Count: 7}) {
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, k)
		}
		slices.Sort(seen)
		seen = slices.Compact(seen)
		want := slices.Sorted(slices.Values(keys))
		if !slices.Equal(seen, want) {
			t.Fatalf("Scan saw %d keys, want %d", len(seen), len(want))
		}
		v, err := c.Do(ctx, "KEYS", "*") // the client adds its prefix to the pattern
		if err != nil || v.Len() != len(keys) {
			t.Fatalf("KEYS on every master: %d keys, %v", v.Len(), err)
		}
		total := 0
		for _, m := range cl.Masters(t) {
			n, _ := strconv.Atoi(m.Do(t, "DBSIZE"))
			total += n
		}
		if v, err := c.Do(ctx, "DBSIZE"); err != nil || mustInt(t, v) != int64(total) {
			t.Fatalf("DBSIZE = %v %v, masters hold %d", v, err, total)
		}
		script := respire.NewScript("return redis.call('GET', KEYS[1])")
		v, err = c.Do(ctx, "SCRIPT", "LOAD", script.Source())
		if s, _ := v.Text(); err != nil || s != script.Hash() {
			t.Fatalf("SCRIPT LOAD: %v %v", v, err)
		}
		for _, m := range cl.Masters(t) {
			if got := m.Do(t, "SCRIPT", "EXISTS", script.Hash()); got != "1" {
				t.Fatalf("SCRIPT LOAD did not reach %s", m.Addr())
			}
		}
		v, err = c.Do(ctx, "SCRIPT", "EXISTS", script.Hash(), "0000000000000000000000000000000000000000")
		if a, _ := v.Array(); err != nil || len(a) != 2 || mustInt(t, a[0]) != 1 || mustInt(t, a[1]) != 0 {
			t.Fatalf("SCRIPT EXISTS: %v %v", v, err)
		}
		for _, k := range keys {
			if v, err := script.Run(ctx, c, []string{k}); err != nil || mustInt(t, v) != 1 {
				t.Fatalf("script on %s: %v %v", k, v, err)
			}
		}
	})

	t.Run("BlockingCommands", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{})
		for _, slot := range []int{5, 6000, 12000} {
			k := clusterserver.KeyIn(slot, "queue")
			done := make(chan error, 1)
			go func() {
				v, err := c.Do(ctx, "BLPOP", k, 10)
				if err == nil {
					if a, _ := v.Array(); len(a) != 2 {
						err = fmt.Errorf("BLPOP replied %v", v)
					}
				}
				done <- err
			}()
			// Push until the popper has taken one: it may not be blocked yet.
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := c.Do(ctx, "RPUSH", k, "job"); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(20 * time.Millisecond):
					if time.Now().Before(deadline) {
						continue
					}
					t.Fatal("BLPOP never returned")
				}
				break
			}
		}
	})

	t.Run("ReplicaReads", func(t *testing.T) {
		// Run alone, the replicas have not been written to yet: the topology the
		// client reads first would call them loading and keep reads on the masters.
		cl.WaitReplicasOnline(t)
		c := clusterClient(t, cl, respire.Options{ReplicaReads: true})
		k := clusterserver.KeyIn(42, "replica")
		if _, err := c.Do(ctx, "SET", k, "v"); err != nil {
			t.Fatal(err)
		}
		master := cl.MasterOf(t, 42)
		replica := cl.ReplicasOf(t, master)[0]
		before := replica.Server.Calls(t, "get")
		// Replication is asynchronous: poll until the replica has the write.
		testkit.WaitFor(t, "the replica to serve the write", func() bool {
			v, err := c.Do(ctx, "GET", k)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := v.Text()
			return s == "v"
		})
		if after := replica.Server.Calls(t, "get"); after <= before {
			t.Fatalf("replica %s served no GET (%d before, %d after)", replica.Addr(), before, after)
		}
		// Writes still go to the master.
		if _, err := c.Do(ctx, "INCR", k+"n"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PubSub", func(t *testing.T) {
		// Plain PUBLISH reaches every node of a cluster: a subscription on any node
		// hears it.
		pub := clusterClient(t, cl, respire.Options{})
		for _, proto := range protocols {
			c := clusterClient(t, cl, respire.Options{Protocol: proto})
			sub, err := c.Subscribe(ctx, "broadcast")
			if err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, fmt.Sprintf("a message over RESP%d", proto), func() bool {
				if _, err := pub.Do(ctx, "PUBLISH", "broadcast", "hi"); err != nil {
					t.Fatal(err)
				}
				select {
				case m := <-sub.Messages():
					return m.Payload == "hi"
				case <-time.After(50 * time.Millisecond):
					return false
				}
			})
			sub.Close()
		}
	})

	t.Run("Fanout", func(t *testing.T) {
		c := clusterClient(t, cl, respire.Options{})
		if _, err := c.Do(ctx, "SET", clusterserver.KeyIn(3, "f"), 1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		for _, m := range cl.Masters(t) {
			if n := m.Do(t, "DBSIZE"); n != "0" {
				t.Fatalf("FLUSHALL left %s keys on %s", n, m.Addr())
			}
		}
	})

	// Last: it changes the cluster. A node that leaves is closed at the next refresh.
	t.Run("NodeLeaves", func(t *testing.T) {
		// The replica's CLIENT LIST says whether the client holds a connection to it:
		// the client is not asked which nodes it keeps.
		const name = "node-leaves"
		cl.WaitReplicasOnline(t) // as for ReplicaReads
		c := clusterClient(t, cl, respire.Options{ReplicaReads: true, ClientName: name})
		k := clusterserver.KeyIn(42, "leave")
		master := cl.MasterOf(t, 42)
		replica := cl.ReplicasOf(t, master)[0]
		ours := func() int { return strings.Count(replica.Do(t, "CLIENT", "LIST"), " name="+name+" ") }
		if _, err := c.Do(ctx, "GET", k); err != nil {
			t.Fatal(err)
		}
		if ours() == 0 {
			t.Fatalf("the replica %s has no open connection", replica.Addr())
		}
		cl.RemoveNode(t, replica)
		// The read finds the replica out of the cluster, which asks for the refresh
		// that drops it.
		if _, err := c.Do(ctx, "GET", k); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the connection to the node that left to close", func() bool { return ours() == 0 })
		// Reads of its shard go to the master now.
		before := master.Server.Calls(t, "get")
		for range 3 {
			if _, err := c.Do(ctx, "GET", k); err != nil {
				t.Fatal(err)
			}
		}
		if n, served := ours(), master.Server.Calls(t, "get")-before; n != 0 || served < 3 {
			t.Fatalf("the node that left is still in use (%d connections to it, %d of 3 reads on the master)", n, served)
		}
	})
}

// clusterShapes runs one round of the common command shapes on key (and keys tagged
// with it) and checks the replies.
func clusterShapes(t *testing.T, ctx context.Context, c *respire.Client, key string, i int) {
	t.Helper()
	tag := "{" + key + "}"
	steps := []struct {
		args []any
		want string
	}{
		{[]any{"SET", key, "v:" + key}, "OK"},
		{[]any{"GET", key}, "v:" + key},
		{[]any{"APPEND", tag + "s", "ab"}, "2"},
		{[]any{"INCRBY", tag + "n", i}, strconv.Itoa(i)},
		{[]any{"HSET", tag + "h", "f", "x"}, "1"},
		{[]any{"HGET", tag + "h", "f"}, "x"},
		{[]any{"RPUSH", tag + "l", "a", "b"}, "2"},
		{[]any{"LMOVE", tag + "l", tag + "l2", "LEFT", "RIGHT"}, "a"},
		{[]any{"SADD", tag + "s1", "m"}, "1"},
		{[]any{"SINTERCARD", 1, tag + "s1"}, "1"},
		{[]any{"ZADD", tag + "z", 1.5, "m"}, "1"},
		{[]any{"ZSCORE", tag + "z", "m"}, "1.5"},
		{[]any{"XADD", tag + "x", "*", "f", "v"}, ""},
		{[]any{"XLEN", tag + "x"}, "1"},
		{[]any{"MSET", tag + "a", 1, tag + "b", 2}, "OK"},
		{[]any{"MGET", tag + "a", tag + "b"}, "[1 2]"},
		{[]any{"EVAL", "return redis.call('INCR', KEYS[1])", 1, tag + "e"}, "1"},
		{[]any{"RENAME", tag + "a", tag + "c"}, "OK"},
		{[]any{"EXISTS", tag + "a", tag + "b", tag + "c"}, "2"},
		{[]any{"PEXPIRE", tag + "c", 60000}, "1"},
		{[]any{"DEL", tag + "b", tag + "c"}, "2"},
		{[]any{"XREAD", "COUNT", 1, "STREAMS", tag + "x", "0"}, ""},
		{[]any{"OBJECT", "ENCODING", key}, "embstr"},
	}
	for _, s := range steps {
		v, err := c.Do(ctx, s.args...)
		if err != nil {
			t.Fatalf("%v: %v", s.args, err)
		}
		if s.want == "" {
			continue
		}
		got := render(v)
		if got != s.want {
			t.Fatalf("%v = %s, want %s", s.args, got, s.want)
		}
	}
}

// render shows a reply compactly: text, numbers, [a b] for arrays.
func render(v resp.Value) string {
	if a, err := v.Array(); err == nil {
		parts := make([]string, len(a))
		for i, e := range a {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	if f, err := v.Float(); err == nil && v.Kind() == resp.KindDouble {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	if n, err := v.Int(); err == nil && v.Kind() == resp.KindInteger {
		return strconv.FormatInt(n, 10)
	}
	s, _ := v.Text()
	return s
}

// errorCount reads errorstat_<code>:count=N from INFO errorstats.
func errorCount(t *testing.T, s *testserver.Server, code string) int {
	t.Helper()
	for line := range strings.Lines(s.Do(t, "INFO", "errorstats")) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+code+":count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// clusterRetries is how many times a TRYAGAIN or CLUSTERDOWN is retried before the
// client gives up, as docs/cluster.md says.
const clusterRetries = 8

// recorder is an Observer that keeps the command starts and counts the slot-map
// refreshes that read a topology.
type recorder struct {
	observe.Base
	mu        sync.Mutex
	starts    []observe.CommandStart
	refreshed int
}

func (r *recorder) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, e)
	return ctx
}

func (r *recorder) Topology(e observe.Topology) {
	if e.Err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshed++
}

// refreshes returns how many refreshes read a topology so far.
func (r *recorder) refreshes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refreshed
}

// Redirections: ASK during a migration leaves the slot table alone; MOVED afterwards
// updates it, and however many MOVED replies arrive at once, one refresh follows.
func TestClusterRedirections(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := clusterTestContext(t)
	rec := &recorder{}
	c := clusterClient(t, cl, respire.Options{Observer: rec})
	const slot = 777
	keys := []string{clusterserver.KeyIn(slot, "a"), clusterserver.KeyIn(slot, "b"), clusterserver.KeyIn(slot, "c")}
	for _, k := range keys {
		if _, err := c.Do(ctx, "SET", k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}
	src := cl.MasterOf(t, slot)
	var dst *clusterserver.Node
	for _, m := range cl.Masters(t) {
		if m.ID != src.ID {
			dst = m
			break
		}
	}
	// The slot's owner in the client's table: Dedicated checks out a connection to it
	// and sends no command, so no redirection corrects the answer.
	tableOwner := func() string {
		t.Helper()
		cn, release, err := c.Dedicated(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		defer release(true)
		return cn.Addr()
	}

	// A client with a key prefix: the ASKING batch must prefix the key too.
	pc := clusterClient(t, cl, respire.Options{KeyPrefix: "p:"})
	prefixed := clusterserver.KeyIn(slot, "p:x")
	if _, err := pc.Do(ctx, "SET", strings.TrimPrefix(prefixed, "p:"), "pv"); err != nil {
		t.Fatal(err)
	}

	// Shard subscriptions on the slot, in both protocols: they must follow it.
	channel := clusterserver.KeyIn(slot, "news")
	var subs []*respire.Subscription
	for _, proto := range protocols {
		sc := clusterClient(t, cl, respire.Options{Protocol: proto})
		sub, err := sc.SSubscribe(ctx, channel)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	if _, err := c.SSubscribe(ctx, channel, clusterserver.KeyIn(slot+1, "other")); !errors.Is(err, respire.ErrCrossSlot) {
		t.Fatalf("SSubscribe across slots: %v", err)
	}
	expectShardMessages(t, c, channel, subs)

	mig := cl.BeginMigration(t, slot, dst)
	mig.MoveKeys(t, keys[0])
	mig.MoveKeys(t, prefixed)
	if v, err := pc.Do(ctx, "GET", strings.TrimPrefix(prefixed, "p:")); err != nil || render(v) != "pv" {
		t.Fatalf("GET of a migrated key with a key prefix: %v %v", v, err)
	}
	before := dst.Server.Calls(t, "asking")
	v, err := c.Do(ctx, "GET", keys[0])
	if s, _ := v.Text(); err != nil || s != "v"+keys[0] {
		t.Fatalf("GET of a migrated key: %v %v", v, err)
	}
	if calls := dst.Server.Calls(t, "asking"); calls != before+1 {
		t.Fatalf("ASKING sent %d times to the target, want 1", calls-before)
	}
	// A key that does not exist yet is created where the slot is going.
	if _, err := c.Do(ctx, "SET", clusterserver.KeyIn(slot, "new"), "n"); err != nil {
		t.Fatal(err)
	}
	// The target answers GET only after ASKING; count its keys instead.
	if got := dst.Do(t, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); got != "3" {
		t.Fatalf("the target holds %s keys of the slot, want 3 (the two migrated and the new one)", got)
	}
	if got := tableOwner(); got != src.Addr() {
		t.Fatalf("after ASK the table says %s, want still %s", got, src.Addr())
	}
	// A batch whose member is redirected gets it retried alone, in place.
	res, err := c.DoMulti(ctx, []any{"GET", keys[1]}, []any{"GET", keys[0]}, []any{"GET", keys[2]})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{keys[1], keys[0], keys[2]} {
		if s, _ := res[i].Value.Text(); res[i].Err != nil || s != "v"+want {
			t.Fatalf("batch member %d: %v %v", i, res[i].Value, res[i].Err)
		}
	}
	// A multi-key command whose keys are split between the nodes gets TRYAGAIN: the
	// client retries with a backoff, a bounded number of times, then gives up.
	start := time.Now()
	_, err = c.Do(ctx, "MGET", keys[0], keys[1])
	if !resp.HasCode(err, "TRYAGAIN") || time.Since(start) > 10*time.Second {
		t.Fatalf("MGET of split keys: %v after %v, want TRYAGAIN after a bounded wait", err, time.Since(start))
	}
	if n := errorCount(t, src.Server, "TRYAGAIN"); n != clusterRetries+1 {
		t.Fatalf("source answered TRYAGAIN %d times, want %d (one try and every retry)", n, clusterRetries+1)
	}
	// Retrying while the migration goes on: it succeeds once the keys are together.
	mgot := make(chan error, 1)
	go func() {
		v, err := c.Do(ctx, "MGET", keys[0], keys[1])
		if a, _ := v.Array(); err == nil && (len(a) != 2 || render(v) != "[v"+keys[0]+" v"+keys[1]+"]") {
			err = fmt.Errorf("MGET = %v", v)
		}
		mgot <- err
	}()
	before = errorCount(t, src.Server, "TRYAGAIN")
	testkit.WaitFor(t, "the MGET to get TRYAGAIN", func() bool { return errorCount(t, src.Server, "TRYAGAIN") > before })
	mig.MoveKeys(t, keys[1])
	if err := <-mgot; err != nil {
		t.Fatalf("MGET retried across the migration: %v", err)
	}

	mig.MoveAll(t)
	mig.Finish(t)

	fetches := rec.refreshes()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			v, err := c.Do(ctx, "GET", keys[1])
			if s, _ := v.Text(); err == nil && s != "v"+keys[1] {
				err = fmt.Errorf("GET = %v", v)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := tableOwner(); got != dst.Addr() {
		t.Fatalf("after MOVED the table says %s, want %s", got, dst.Addr())
	}
	// The server unsubscribed the shard subscriptions when the slot left the source;
	// they are back, on the new owner.
	expectShardMessages(t, c, channel, subs)
	// The refresh runs in the background: wait for it, then count.
	testkit.WaitFor(t, "the background refresh", func() bool { return rec.refreshes() > fetches })
	if n := rec.refreshes() - fetches; n < 1 || n > 2 {
		t.Fatalf("%d topology refreshes after a burst of MOVED, want 1 (2 at most, with a periodic one)", n)
	}
}

// expectShardMessages publishes on channel until every subscription has received a
// message (a subscription that just moved may take a moment to be back).
func expectShardMessages(t *testing.T, c *respire.Client, channel string, subs []*respire.Subscription) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i, sub := range subs {
		for {
			payload := fmt.Sprintf("m%d-%d", i, time.Now().UnixNano())
			if _, err := c.Do(context.Background(), "SPUBLISH", channel, payload); err != nil {
				t.Fatal(err)
			}
			got := false
			timer := time.NewTimer(50 * time.Millisecond)
		drain:
			for {
				select {
				case m := <-sub.Messages():
					if m.Channel == channel && m.Payload == payload {
						got = true
						break drain
					}
				case <-timer.C:
					break drain
				}
			}
			timer.Stop()
			if got {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("subscription %d received nothing on %s", i, channel)
			}
		}
	}
}

// A redirection loop ends in a clear error rather than going on forever.
func TestClusterRedirectLoop(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true, Masters: 2})
	ctx := clusterTestContext(t)
	c := clusterClient(t, cl, respire.Options{})
	const slot = 4242
	k := clusterserver.KeyIn(slot, "loop")
	// Two nodes each believing the other migrates the slot away: each answers ASK to
	// the other for a missing key, forever.
	src := cl.MasterOf(t, slot)
	var other *clusterserver.Node
	for _, m := range cl.Masters(t) {
		if m.ID != src.ID {
			other = m
		}
	}
	src.Do(t, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", other.ID)
	t.Cleanup(func() { src.Do(t, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "STABLE") })
	// The target is not importing: it answers MOVED back to the source.
	_, err := c.Do(ctx, "GET", k)
	if !errors.Is(err, respire.ErrTooManyRedirects) || !strings.Contains(err.Error(), "slot 4242") {
		t.Fatalf("GET in a redirection loop: %v, want ErrTooManyRedirects", err)
	}
	if !resp.HasCode(err, "MOVED") && !resp.HasCode(err, "ASK") {
		t.Fatalf("the error should wrap the last redirection: %v", err)
	}
}

func TestClusterBadInput(t *testing.T) {
	ctx := clusterTestContext(t)
	if _, err := respire.NewClient(ctx, respire.Options{Cluster: true}); !errors.Is(err, respire.ErrInvalidOptions) {
		t.Fatalf("no seeds: %v", err)
	}
	ports := testserver.FreePorts(t, 2)
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])}
	_, err := respire.NewClient(ctx, respire.Options{Addrs: seeds, Cluster: true, DialTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no cluster node answered") || !strings.Contains(err.Error(), seeds[1]) {
		t.Fatalf("unreachable seeds: %v", err)
	}
	if !errors.Is(err, conn.ErrNotSent) && !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("unreachable seeds: the error should say the dial failed: %v", err)
	}
	srv := testserver.Start(t, testserver.Config{})
	_, err = respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, Cluster: true})
	if !errors.Is(err, respire.ErrInvalidOptions) || !strings.Contains(err.Error(), "not a cluster node") {
		t.Fatalf("a standalone server as seed: %v", err)
	}
	if _, err := respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, Cluster: true, DB: 2}); !errors.Is(err, respire.ErrInvalidOptions) {
		t.Fatalf("DB 2 on a Cluster: %v", err)
	}
	for _, raw := range []string{"redis+cluster://a:1,,b:2", "redis+cluster://a:1/3", "redis+cluster://a:x"} {
		if _, err := respire.ParseURL(raw); !errors.Is(err, respire.ErrInvalidURL) && !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("respire.ParseURL(%q): %v", raw, err)
		}
	}
	o, err := respire.ParseURL("rediss+cluster://u:p@10.0.0.1:7000,[::1]:7001,node3/?dial_timeout=2s&key_prefix=app:")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Cluster || !slices.Equal(o.Addrs, []string{"10.0.0.1:7000", "[::1]:7001", "node3:6379"}) ||
		o.Username != "u" || o.Password != "p" || o.TLS == nil || o.TLS.ServerName != "" ||
		o.DialTimeout != 2*time.Second || o.KeyPrefix != "app:" {
		t.Fatalf("ParseURL: %+v", o)
	}
}

// Pipelines and single commands on a cluster, for comparison with the standalone
// benchmarks in bench_test.go.
func BenchmarkCluster(b *testing.B) {
	cl := clusterserver.Start(b, clusterserver.Config{NoReplicas: true})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: cl.Seeds(), Cluster: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	key := "bench:key"
	c.Do(ctx, "SET", key, "0123456789abcdef")
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Do(ctx, "GET", key); err != nil {
				b.Fatal(err)
			}
		}
	})
	// respbench -cluster's get-par: 64 goroutines (on 2 cores) reading one key, so one
	// node, through the Cluster router; BenchmarkClientGetParallel is the same on one
	// server.
	b.Run("GETParallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Do(ctx, "GET", key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	for _, spread := range []bool{false, true} {
		cmds := make([][]any, 100)
		for i := range cmds {
			k := key
			if spread {
				k = clusterserver.KeyIn(i*cluster.SlotCount/len(cmds), "bench:")
			}
			cmds[i] = []any{"GET", k}
		}
		b.Run(fmt.Sprintf("Pipeline100/spread=%v", spread), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.DoMulti(ctx, cmds...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
