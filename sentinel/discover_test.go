package sentinel_test

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

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/sentinel"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// fastFail bounds how long a discovery that must fail may take: every address in
// these tests refuses at once or answers.
const fastFail = 5 * time.Second

// masters records what a Monitor reported through OnMaster.
type masters struct {
	mu    sync.Mutex
	addrs []string
}

func (m *masters) on(addr string) {
	m.mu.Lock()
	m.addrs = append(m.addrs, addr)
	m.mu.Unlock()
}

func (m *masters) all() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.addrs)
}

// start starts a Monitor that the test closes.
func start(t *testing.T, sentinels []string, name string, cfg sentinel.Config) (*sentinel.Monitor, *masters, error) {
	t.Helper()
	ms := &masters{}
	cfg.Sentinels, cfg.MasterName, cfg.OnMaster = sentinels, name, ms.on
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := sentinel.Start(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { m.Close() })
	}
	return m, ms, err
}

func nowhere(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(testserver.FreePort(t))
}

func TestDiscovery(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{})
	master := d.Nodes[0].Addr()
	all := d.SentinelAddrs()

	t.Run("every Sentinel up", func(t *testing.T) {
		m, ms, err := start(t, all, d.MasterName(), sentinel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Master() != master || !slices.Equal(ms.all(), []string{master}) {
			t.Fatalf("Master() = %s, OnMaster got %v; want %s", m.Master(), ms.all(), master)
		}
		replicas, err := m.Replicas(context.Background())
		want := []string{d.Nodes[1].Addr(), d.Nodes[2].Addr()}
		slices.Sort(replicas)
		slices.Sort(want)
		if err != nil || !slices.Equal(replicas, want) {
			t.Fatalf("Replicas() = %v, %v; want %v", replicas, err, want)
		}
	})

	t.Run("first Sentinel points nowhere", func(t *testing.T) {
		bad := nowhere(t)
		began := time.Now()
		m, _, err := start(t, append([]string{bad}, all...), d.MasterName(), sentinel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("discovered in %v", time.Since(began))
		if m.Master() != master {
			t.Fatalf("Master() = %s, want %s", m.Master(), master)
		}
		if got := m.Sentinels(); got[0] == bad || !slices.Contains(got, bad) {
			t.Fatalf("Sentinels() = %v: the one that answered goes first, the configured one stays", got)
		}
	})

	t.Run("one Sentinel down", func(t *testing.T) {
		d.StopSentinel(t, 0)
		defer d.StartSentinel(t, 0)
		m, _, err := start(t, all, d.MasterName(), sentinel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Master() != master {
			t.Fatalf("Master() = %s, want %s", m.Master(), master)
		}
	})

	t.Run("Sentinel list refreshed", func(t *testing.T) {
		m, _, err := start(t, all[2:], d.MasterName(), sentinel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		got := m.Sentinels()
		for _, s := range all {
			if !slices.Contains(got, s) {
				t.Fatalf("Sentinels() = %v lacks %s (SENTINEL SENTINELS)", got, s)
			}
		}
		// The configured Sentinel goes away; the learned ones answer.
		d.StopSentinel(t, 2)
		defer d.StartSentinel(t, 2)
		if replicas, err := m.Replicas(context.Background()); err != nil || len(replicas) != 2 {
			t.Fatalf("Replicas() with the only configured Sentinel down = %v, %v", replicas, err)
		}
	})
}

func TestBadInput(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1})

	t.Run("unknown master name", func(t *testing.T) {
		began := time.Now()
		_, ms, err := start(t, d.SentinelAddrs(), "no-such-master", sentinel.Config{})
		if !errors.Is(err, sentinel.ErrUnknownMaster) {
			t.Fatalf("err = %v, want ErrUnknownMaster", err)
		}
		t.Logf("%v after %v", err, time.Since(began))
		if time.Since(began) > fastFail || len(ms.all()) != 0 {
			t.Fatalf("took %v, reported %v", time.Since(began), ms.all())
		}
	})

	t.Run("no reachable Sentinel", func(t *testing.T) {
		began := time.Now()
		_, _, err := start(t, []string{nowhere(t), nowhere(t)}, "mymaster", sentinel.Config{})
		if !errors.Is(err, sentinel.ErrNoSentinel) {
			t.Fatalf("err = %v, want ErrNoSentinel", err)
		}
		t.Logf("%v after %v", err, time.Since(began))
		if time.Since(began) > fastFail {
			t.Fatalf("took %v", time.Since(began))
		}
	})

	t.Run("Sentinel names a replica", func(t *testing.T) {
		// A master and its replica that no other Sentinel watches, and a Sentinel
		// told that the replica is the master.
		m := testserver.Start(t, testserver.Config{})
		r := testserver.Start(t, testserver.Config{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(m.Port())}})
		liar := sentinelserver.StartLoneSentinel(t, "mymaster", r.Port())
		began := time.Now()
		_, ms, err := start(t, []string{liar.Addr()}, "mymaster", sentinel.Config{})
		if !errors.Is(err, sentinel.ErrNotMaster) {
			t.Fatalf("err = %v, want ErrNotMaster", err)
		}
		t.Logf("%v after %v", err, time.Since(began))
		if time.Since(began) > fastFail || len(ms.all()) != 0 {
			t.Fatalf("took %v, reported %v", time.Since(began), ms.all())
		}

		// Next to an honest Sentinel, the liar is passed over.
		liar2 := sentinelserver.StartLoneSentinel(t, d.MasterName(), d.Nodes[1].Port())
		mon, _, err := start(t, append([]string{liar2.Addr()}, d.SentinelAddrs()...), d.MasterName(), sentinel.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if mon.Master() != d.Nodes[0].Addr() {
			t.Fatalf("Master() = %s, want %s", mon.Master(), d.Nodes[0].Addr())
		}
	})

	t.Run("invalid config", func(t *testing.T) {
		for _, cfg := range []sentinel.Config{
			{MasterName: "m", OnMaster: func(string) {}},
			{Sentinels: d.SentinelAddrs(), OnMaster: func(string) {}},
			{Sentinels: d.SentinelAddrs(), MasterName: "m"},
		} {
			if _, err := sentinel.Start(context.Background(), cfg); !errors.Is(err, sentinel.ErrInvalidConfig) {
				t.Errorf("%+v: err = %v", cfg, err)
			}
		}
	})

	t.Run("context ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := sentinel.Start(ctx, sentinel.Config{Sentinels: d.SentinelAddrs(), MasterName: d.MasterName(), OnMaster: func(string) {}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestSentinelAuth(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1, Password: "node-pw", SentinelPassword: "sentinel-pw"})
	cfg := sentinel.Config{
		SentinelConn: conn.Options{Password: "sentinel-pw"},
		NodeConn:     conn.Options{Password: "node-pw"},
	}
	m, _, err := start(t, d.SentinelAddrs(), d.MasterName(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Master() != d.Nodes[0].Addr() {
		t.Fatalf("Master() = %s", m.Master())
	}

	cfg.SentinelConn.Password = ""
	_, _, err = start(t, d.SentinelAddrs(), d.MasterName(), cfg)
	if !errors.Is(err, sentinel.ErrNoSentinel) || !resp.HasCode(err, "NOAUTH") {
		t.Fatalf("without the Sentinel password: %v, want ErrNoSentinel with NOAUTH", err)
	}
	cfg.SentinelConn.Password = "sentinel-pw"
	cfg.NodeConn.Password = "wrong"
	_, _, err = start(t, d.SentinelAddrs(), d.MasterName(), cfg)
	if !resp.HasCode(err, "WRONGPASS") {
		t.Fatalf("with a wrong node password: %v, want WRONGPASS", err)
	}
}

// TestRoleWithoutROLE: a user whom an ACL denies ROLE still gets the role, from HELLO.
func TestRoleWithoutROLE(t *testing.T) {
	users := []testserver.User{{Name: "app", Password: "app-pw", Rules: []string{"~*", "&*", "+@all", "-role"}}}
	m := testserver.Start(t, testserver.Config{Users: users})
	r := testserver.Start(t, testserver.Config{Users: users, Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(m.Port())}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, proto := range []int{2, 3} {
		for _, tc := range []struct {
			s    *testserver.Server
			want string
		}{{m, sentinel.RoleMaster}, {r, sentinel.RoleReplica}} {
			cn, err := conn.Dial(ctx, tc.s.Addr(), conn.Options{Protocol: proto, Username: "app", Password: "app-pw"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cn.Do(ctx, "ROLE"); !resp.HasCode(err, "NOPERM") {
				t.Fatalf("ROLE as app: %v, want NOPERM", err)
			}
			role, err := sentinel.Role(ctx, cn)
			cn.Close()
			if err != nil || role != tc.want {
				t.Errorf("RESP%d: Role of %s = %q, %v; want %q", proto, tc.s.Addr(), role, err, tc.want)
			}
		}
	}
}

// TestWatcherResubscribes: when the Sentinel the Monitor listens to dies, it listens to
// another, and a failover announced there moves it without anyone calling Recheck.
func TestWatcherResubscribes(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{})
	m, ms, err := start(t, d.SentinelAddrs(), d.MasterName(), sentinel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var first, second int
	testkit.WaitWithin(t, 10*time.Second, "the subscription", func() (err error) { first, err = listener(d, -1); return err })
	d.StopSentinel(t, first)
	testkit.WaitWithin(t, 10*time.Second, "a subscription on another Sentinel", func() (err error) { second, err = listener(d, first); return err })
	t.Logf("listened to Sentinel %d, then to Sentinel %d", first, second)

	nm := d.Failover(t)
	testkit.WaitWithin(t, 10*time.Second, "the Monitor to follow the failover", func() error {
		if got := m.Master(); got != nm.Addr() {
			return fmt.Errorf("Master() = %s, want %s", got, nm.Addr())
		}
		return nil
	})
	if got := ms.all(); !slices.Equal(got, []string{d.Nodes[0].Addr(), nm.Addr()}) {
		t.Fatalf("OnMaster got %v", got)
	}
	if err := m.LastError(); err != nil {
		t.Fatalf("LastError() = %v", err)
	}
}

// listener returns the index of the Sentinel that holds the Monitor's subscription:
// the one client subscribed to two channels. skip is a Sentinel not to ask.
func listener(d *sentinelserver.Deployment, skip int) (int, error) {
	for i := range d.Sentinels {
		if i == skip {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		list, err := d.SentinelDo(ctx, i, "CLIENT", "LIST")
		cancel()
		if err == nil && strings.Contains(list, " sub=2 ") {
			return i, nil
		}
	}
	return -1, errors.New("no Sentinel has the Monitor's subscription")
}
