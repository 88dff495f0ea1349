package sentinelserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire/test/testserver"
)

// Config describes a deployment. The zero value is a master named "mymaster" with two
// replicas and three Sentinels, quorum 2, without passwords.
type Config struct {
	MasterName string // default "mymaster"
	Replicas   int    // default 2; -1 for none
	Sentinels  int    // default 3
	Quorum     int    // default: a majority of the Sentinels

	// DownAfter is the Sentinels' down-after-milliseconds (default 1s) and
	// FailoverTimeout their failover-timeout (default 5s).
	DownAfter       time.Duration
	FailoverTimeout time.Duration

	// Password is the data nodes' default-user password: replicas use it as
	// masterauth and Sentinels as auth-pass.
	Password string
	// SentinelPassword is the Sentinels' own requirepass (and sentinel-pass between
	// them).
	SentinelPassword string

	// NodeArgs are extra redis-server arguments for every data node.
	NodeArgs []string
}

// Timing of the harness; every wait polls against a deadline.
const (
	agreeTimeout    = 30 * time.Second
	failoverTimeout = 30 * time.Second
	pollInterval    = 20 * time.Millisecond
	cmdTimeout      = 5 * time.Second
)

// Deployment is a running master, replicas and Sentinels.
type Deployment struct {
	cfg Config
	// Nodes are the data nodes; Nodes[0] was the master at start. Roles change with
	// failovers: ask Master.
	Nodes []*testserver.Server
	// Sentinels are the Sentinel processes, in the order of SentinelAddrs.
	Sentinels []*testserver.Server

	mu      sync.Mutex
	stopped []bool // by Sentinel index
}

// Start starts the deployment described by cfg and waits until the Sentinels agree.
func Start(t testing.TB, cfg Config) *Deployment {
	t.Helper()
	cfg.defaults()
	d := &Deployment{cfg: cfg}
	nodeArgs := []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
	if cfg.Password != "" {
		nodeArgs = append(nodeArgs, "--masterauth", cfg.Password)
	}
	nodeArgs = append(nodeArgs, cfg.NodeArgs...)
	master := testserver.Start(t, testserver.Config{RequirePass: cfg.Password, Args: nodeArgs})
	if master == nil {
		return nil
	}
	d.Nodes = append(d.Nodes, master)
	for range cfg.Replicas {
		args := append(slices.Clone(nodeArgs), "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
		r := testserver.Start(t, testserver.Config{RequirePass: cfg.Password, Args: args})
		if r == nil {
			return nil
		}
		d.Nodes = append(d.Nodes, r)
	}
	conf := d.sentinelConf(master.Port())
	for range cfg.Sentinels {
		dir := t.TempDir()
		path := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatalf("sentinelserver: %v", err)
			return nil
		}
		s := testserver.Start(t, testserver.Config{Binary: "redis-sentinel", ConfigFile: path})
		if s == nil {
			return nil
		}
		d.Sentinels = append(d.Sentinels, s)
		d.stopped = append(d.stopped, false)
	}
	d.WaitAgreed(t)
	return d
}

func (c *Config) defaults() {
	if c.MasterName == "" {
		c.MasterName = "mymaster"
	}
	switch {
	case c.Replicas == 0:
		c.Replicas = 2
	case c.Replicas < 0:
		c.Replicas = 0
	}
	if c.Sentinels == 0 {
		c.Sentinels = 3
	}
	if c.Quorum == 0 {
		c.Quorum = c.Sentinels/2 + 1
	}
	if c.DownAfter == 0 {
		c.DownAfter = time.Second
	}
	if c.FailoverTimeout == 0 {
		c.FailoverTimeout = 5 * time.Second
	}
}

// sentinelConf is the initial config file of every Sentinel.
func (d *Deployment) sentinelConf(masterPort int) string {
	c := &d.cfg
	lines := []string{
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", c.MasterName, masterPort, c.Quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", c.MasterName, c.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", c.MasterName, c.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s %d", c.MasterName, max(c.Replicas, 1)),
	}
	if c.Password != "" {
		lines = append(lines, fmt.Sprintf("sentinel auth-pass %s %s", c.MasterName, c.Password))
	}
	if c.SentinelPassword != "" {
		lines = append(lines, "requirepass "+c.SentinelPassword, "sentinel sentinel-pass "+c.SentinelPassword)
	}
	return strings.Join(lines, "\n") + "\n"
}

// MasterName returns the name the Sentinels monitor the master under.
func (d *Deployment) MasterName() string { return d.cfg.MasterName }

// SentinelAddrs returns the Sentinels' addresses.
func (d *Deployment) SentinelAddrs() []string {
	out := make([]string, len(d.Sentinels))
	for i, s := range d.Sentinels {
		out[i] = s.Addr()
	}
	return out
}

// Node returns the data node listening on addr, or nil.
func (d *Deployment) Node(addr string) *testserver.Server {
	for _, n := range d.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// SentinelDo runs a command on Sentinel i (authenticating with SentinelPassword) and
// returns the reply rendered as testserver does.
func (d *Deployment) SentinelDo(ctx context.Context, i int, args ...string) (string, error) {
	s := d.Sentinels[i]
	if d.cfg.SentinelPassword != "" {
		return s.DoAs(ctx, "default", d.cfg.SentinelPassword, args...)
	}
	return s.DoErr(ctx, args...)
}

// NodeDo runs a command on a data node as the default user.
func (d *Deployment) NodeDo(ctx context.Context, n *testserver.Server, args ...string) (string, error) {
	return n.DoErr(ctx, args...)
}

// running returns the indexes of the Sentinels not stopped by StopSentinel.
func (d *Deployment) running() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for i, stopped := range d.stopped {
		if !stopped {
			out = append(out, i)
		}
	}
	return out
}

// masterSeenBy returns the master address Sentinel i names.
func (d *Deployment) masterSeenBy(ctx context.Context, i int) (string, error) {
	text, err := d.SentinelDo(ctx, i, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", d.cfg.MasterName)
	if err != nil {
		return "", err
	}
	f := strings.Split(text, "\n")
	if len(f) != 2 {
		return "", fmt.Errorf("GET-MASTER-ADDR-BY-NAME = %q", text)
	}
	return f[0] + ":" + f[1], nil
}

// MasterAddr returns the master address the first running Sentinel that answers
// names.
func (d *Deployment) MasterAddr(t testing.TB) string {
	t.Helper()
	var errs []error
	for _, i := range d.running() {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		addr, err := d.masterSeenBy(ctx, i)
		cancel()
		if err == nil {
			return addr
		}
		errs = append(errs, err)
	}
	t.Fatalf("sentinelserver: no Sentinel names the master: %v", errors.Join(errs...))
	return ""
}

// Master returns the data node the Sentinels name as the master.
func (d *Deployment) Master(t testing.TB) *testserver.Server {
	t.Helper()
	addr := d.MasterAddr(t)
	n := d.Node(addr)
	if n == nil {
		t.Fatalf("sentinelserver: the Sentinels name %s, which is not a node of the deployment", addr)
	}
	return n
}

// WaitAgreed waits until every running Sentinel names the same master, which answers
// ROLE as a master, knows every replica and every other running Sentinel, and every
// replica's link to the master is up.
func (d *Deployment) WaitAgreed(t testing.TB) {
	t.Helper()
	d.poll(t, agreeTimeout, "the Sentinels to agree", d.agreed)
}

// agreed returns nil once the Sentinels agree, or what is missing.
func (d *Deployment) agreed(ctx context.Context) error {
	running := d.running()
	if len(running) == 0 {
		return errors.New("no Sentinel runs")
	}
	var master string
	for _, i := range running {
		addr, err := d.masterSeenBy(ctx, i)
		if err != nil {
			return fmt.Errorf("Sentinel %d: %w", i, err)
		}
		if master != "" && addr != master {
			return fmt.Errorf("Sentinels name %s and %s", master, addr)
		}
		master = addr
		info, err := d.SentinelDo(ctx, i, "SENTINEL", "MASTER", d.cfg.MasterName)
		if err != nil {
			return fmt.Errorf("Sentinel %d: %w", i, err)
		}
		f := fields(info)
		if f["flags"] != "master" {
			return fmt.Errorf("Sentinel %d: master flags %q", i, f["flags"])
		}
		if got := f["num-slaves"]; got != strconv.Itoa(d.cfg.Replicas) {
			return fmt.Errorf("Sentinel %d knows %s replicas, want %d", i, got, d.cfg.Replicas)
		}
		if got := f["num-other-sentinels"]; got != strconv.Itoa(len(d.Sentinels)-1) {
			return fmt.Errorf("Sentinel %d knows %s other Sentinels, want %d", i, got, len(d.Sentinels)-1)
		}
		replicas, err := d.SentinelDo(ctx, i, "SENTINEL", "REPLICAS", d.cfg.MasterName)
		if err != nil {
			return fmt.Errorf("Sentinel %d: %w", i, err)
		}
		if strings.Contains(replicas, "s_down") || strings.Contains(replicas, "disconnected") {
			return fmt.Errorf("Sentinel %d sees a replica down", i)
		}
	}
	m := d.Node(master)
	if m == nil {
		return fmt.Errorf("the Sentinels name %s, not a node of the deployment", master)
	}
	if role, err := d.role(ctx, m); err != nil || role != "master" {
		return fmt.Errorf("%s answers ROLE %q, %v", master, role, err)
	}
	for _, n := range d.Nodes {
		if n == m {
			continue
		}
		info, err := d.NodeDo(ctx, n, "INFO", "replication")
		if err != nil {
			return fmt.Errorf("replica %s: %w", n.Addr(), err)
		}
		if !strings.Contains(info, "master_port:"+strconv.Itoa(m.Port())) || !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s is not in sync with %s", n.Addr(), master)
		}
	}
	return nil
}

// role returns the first element of ROLE on n.
func (d *Deployment) role(ctx context.Context, n *testserver.Server) (string, error) {
	text, err := d.NodeDo(ctx, n, "ROLE")
	if err != nil {
		return "", err
	}
	role, _, _ := strings.Cut(text, "\n")
	return role, nil
}

// fields reads a flat field/value rendering (a map sent as RESP2 array).
func fields(text string) map[string]string {
	lines := strings.Split(text, "\n")
	m := make(map[string]string, len(lines)/2)
	for i := 0; i+1 < len(lines); i += 2 {
		m[lines[i]] = lines[i+1]
	}
	return m
}

// poll calls cond until it returns nil, failing the test with its last error after
// timeout.
func (d *Deployment) poll(t testing.TB, timeout time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		err := cond(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinelserver: waited %v for %s: %v", timeout, what, err)
			return
		}
		timer := time.NewTimer(pollInterval)
		<-timer.C
	}
}

// Failover runs SENTINEL FAILOVER (again while a Sentinel answers that no replica is
// ready yet or a failover is in progress) and waits until every running Sentinel
// names a new master that answers ROLE as one; it returns that node.
func (d *Deployment) Failover(t testing.TB) *testserver.Server {
	t.Helper()
	old := d.MasterAddr(t)
	d.poll(t, failoverTimeout, "SENTINEL FAILOVER to be accepted", func(ctx context.Context) error {
		var errs []error
		for _, i := range d.running() {
			_, err := d.SentinelDo(ctx, i, "SENTINEL", "FAILOVER", d.cfg.MasterName)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	return d.WaitNewMaster(t, old)
}

// KillMaster kills the current master with SIGKILL and returns it (its address is the
// old master's for WaitNewMaster).
func (d *Deployment) KillMaster(t testing.TB) *testserver.Server {
	t.Helper()
	m := d.Master(t)
	m.Kill(t)
	return m
}

// WaitNewMaster waits until every running Sentinel names a master other than old,
// the same one, and that node answers ROLE as a master; it returns that node.
func (d *Deployment) WaitNewMaster(t testing.TB, old string) *testserver.Server {
	t.Helper()
	var master string
	d.poll(t, failoverTimeout, "a new master", func(ctx context.Context) error {
		master = ""
		for _, i := range d.running() {
			addr, err := d.masterSeenBy(ctx, i)
			if err != nil {
				return fmt.Errorf("Sentinel %d: %w", i, err)
			}
			if addr == old {
				return fmt.Errorf("Sentinel %d still names %s", i, old)
			}
			if master != "" && addr != master {
				return fmt.Errorf("Sentinels name %s and %s", master, addr)
			}
			master = addr
		}
		n := d.Node(master)
		if n == nil {
			return fmt.Errorf("the Sentinels name %s, not a node of the deployment", master)
		}
		if role, err := d.role(ctx, n); err != nil || role != "master" {
			return fmt.Errorf("%s answers ROLE %q, %v", master, role, err)
		}
		return nil
	})
	return d.Node(master)
}

// StopSentinel kills Sentinel i with SIGKILL; StartSentinel starts it again.
func (d *Deployment) StopSentinel(t testing.TB, i int) {
	t.Helper()
	d.Sentinels[i].Kill(t)
	d.mu.Lock()
	d.stopped[i] = true
	d.mu.Unlock()
}

// StartSentinel restarts Sentinel i (stopped by StopSentinel) on the same port with
// the config file it rewrote, and waits until it answers.
func (d *Deployment) StartSentinel(t testing.TB, i int) {
	t.Helper()
	d.Sentinels[i].Restart(t)
	d.mu.Lock()
	d.stopped[i] = false
	d.mu.Unlock()
}

// StartLoneSentinel starts one Sentinel, outside any Deployment, that monitors the
// server at 127.0.0.1:port as the master called name, with quorum 1. Pointed at a
// replica, it is a Sentinel that names a replica as the master (until it notices).
func StartLoneSentinel(t testing.TB, name string, port int) *testserver.Server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sentinel.conf")
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 60000\n", name, port, name)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatalf("sentinelserver: %v", err)
		return nil
	}
	return testserver.Start(t, testserver.Config{Binary: "redis-sentinel", ConfigFile: path})
}

// PauseSentinel stops Sentinel i with SIGSTOP: it keeps its connections and accepts
// new ones, but answers nothing. Until ResumeSentinel, the harness leaves it out of
// the Sentinels it asks or waits for.
func (d *Deployment) PauseSentinel(t testing.TB, i int) {
	t.Helper()
	d.Sentinels[i].Pause(t)
	d.mu.Lock()
	d.stopped[i] = true
	d.mu.Unlock()
}

// ResumeSentinel continues Sentinel i after PauseSentinel.
func (d *Deployment) ResumeSentinel(t testing.TB, i int) {
	t.Helper()
	d.Sentinels[i].Resume(t)
	d.mu.Lock()
	d.stopped[i] = false
	d.mu.Unlock()
}
