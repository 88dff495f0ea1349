package integration

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
)

// TestClusterCommandTips: on a real 3-master cluster, a keyless command goes where
// the server's command tips send it (request_policy all_nodes: every master and
// replica; all_shards: every master), and its replies combine as response_policy
// says; commands answered per node are refused. Each node is checked with a direct
// connection, so the client is not trusted to say where its commands went.
func TestClusterCommandTips(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{})
	ctx := clusterTestContext(t)
	c := clusterClient(t, cl, respire.Options{})
	nodes, masters := cl.Nodes(), cl.Masters(t)
	if len(masters) != 3 || len(nodes) <= len(masters) {
		t.Fatalf("%d masters of %d nodes, want 3 masters and replicas", len(masters), len(nodes))
	}

	t.Run("ConfigSetReachesEveryNode", func(t *testing.T) {
		v, err := c.Do(ctx, "CONFIG", "SET", "slowlog-max-len", "777")
		if s, _ := v.Text(); err != nil || s != "OK" {
			t.Fatalf("CONFIG SET: %v %v", v, err)
		}
		for _, n := range nodes {
			if got := n.Do(t, "CONFIG", "GET", "slowlog-max-len"); got != "slowlog-max-len\n777" {
				t.Errorf("CONFIG SET did not reach %s: %q", n.Addr(), got)
			}
		}
	})

	t.Run("ACLSetUserReachesEveryNode", func(t *testing.T) {
		if _, err := c.Do(ctx, "ACL", "SETUSER", "tips-user", "on", ">pw", "+acl|whoami"); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if got, err := n.DoAs(ctx, "tips-user", "pw", "ACL", "WHOAMI"); err != nil || got != "tips-user" {
				t.Errorf("ACL SETUSER did not reach %s: %q %v", n.Addr(), got, err)
			}
		}
		if _, err := c.Do(ctx, "ACL", "DELUSER", "tips-user"); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if got := n.Do(t, "ACL", "USERS"); slices.Contains(strings.Split(got, "\n"), "tips-user") {
				t.Errorf("ACL DELUSER did not reach %s: %q", n.Addr(), got)
			}
		}
	})

	t.Run("ScriptLoadReachesReplicas", func(t *testing.T) {
		script := respire.NewScript("return 'tips'")
		if _, err := c.Do(ctx, "SCRIPT", "LOAD", script.Source()); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if got := n.Do(t, "SCRIPT", "EXISTS", script.Hash()); got != "1" {
				t.Errorf("SCRIPT LOAD did not reach %s", n.Addr())
			}
		}
	})

	t.Run("DBSizeSummedKeysMerged", func(t *testing.T) {
		keys := clusterserver.SampleKeys(30, "tips:")
		for _, k := range keys {
			if _, err := c.Do(ctx, "SET", k, 1); err != nil {
				t.Fatal(err)
			}
		}
		total := 0
		for _, m := range masters {
			n, _ := strconv.Atoi(m.Do(t, "DBSIZE"))
			total += n
		}
		if v, err := c.Do(ctx, "DBSIZE"); err != nil || mustInt(t, v) != int64(total) || total < len(keys) {
			t.Fatalf("DBSIZE = %v %v, the masters hold %d", v, err, total)
		}
		v, err := c.Do(ctx, "KEYS", "tips:*")
		if err != nil {
			t.Fatal(err)
		}
		elems, err := v.Array()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range elems {
			s, _ := e.Text()
			got = append(got, s)
		}
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
			t.Fatalf("KEYS gave %d keys, want the %d of every master", len(got), len(want))
		}
	})

	t.Run("FunctionLoadAndDeleteOnEveryMaster", func(t *testing.T) {
		lib := "#!lua name=tipslib\nredis.register_function('tips_fn', function() return 1 end)"
		if v, err := c.Do(ctx, "FUNCTION", "LOAD", lib); err != nil {
			t.Fatalf("FUNCTION LOAD: %v %v", v, err)
		}
		for _, m := range masters {
			if got := m.Do(t, "FUNCTION", "LIST", "LIBRARYNAME", "tipslib"); !strings.Contains(got, "tips_fn") {
				t.Errorf("FUNCTION LOAD did not reach %s: %q", m.Addr(), got)
			}
		}
		if _, err := c.Do(ctx, "FUNCTION", "DELETE", "tipslib"); err != nil {
			t.Fatal(err)
		}
		for _, m := range masters {
			if got := m.Do(t, "FUNCTION", "LIST", "LIBRARYNAME", "tipslib"); got != "" {
				t.Errorf("FUNCTION DELETE did not reach %s: %q", m.Addr(), got)
			}
		}
	})

	t.Run("OneSucceeded", func(t *testing.T) {
		// No script runs anywhere: every master answers NOTBUSY, and so does the
		// fan-out, naming the first.
		_, err := c.Do(ctx, "SCRIPT", "KILL")
		var se *resp.ServerError
		if !errors.As(err, &se) || se.Code != "NOTBUSY" {
			t.Fatalf("SCRIPT KILL with nothing running: %v, want NOTBUSY", err)
		}
	})

	t.Run("PerNodeRefused", func(t *testing.T) {
		for _, args := range [][]any{{"INFO", "server"}, {"MEMORY", "STATS"}, {"RANDOMKEY"}} {
			_, err := c.Do(ctx, args...)
			name := strings.ToUpper(fmt.Sprint(args[0]))
			if len(args) > 1 && name == "MEMORY" {
				name += " " + fmt.Sprint(args[1])
			}
			want := "respire: command answers per node on a cluster: " + name +
				"; send it to each node you mean, on that node's connection (Client.Dedicated for a key it serves, then Do on that connection) or with a Client of that node"
			if !errors.Is(err, respire.ErrPerNode) || err.Error() != want || conn.WasWritten(err) {
				t.Errorf("%v: %v\nwant %s", args, err, want)
			}
		}
		_, err := c.Do(ctx, "SCAN", 0)
		if want := "respire: command answers per node on a cluster: SCAN; Client.Scan walks every master"; !errors.Is(err, respire.ErrPerNode) || err.Error() != want {
			t.Errorf("SCAN: %v\nwant %s", err, want)
		}
		// The per-node way the error names works.
		cn, release, err := c.Dedicated(ctx, "tips:k")
		if err != nil {
			t.Fatal(err)
		}
		v, err := cn.Do(ctx, "INFO", "server")
		release(err == nil)
		if s, _ := v.Text(); err != nil || !strings.Contains(s, "redis_version") {
			t.Fatalf("INFO on one node's connection: %v", err)
		}
	})
}
