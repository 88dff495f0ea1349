package sentinel

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/respire/respire/conn"
)

// Config describes the master a Monitor follows and how to reach the Sentinels.
type Config struct {
	// Sentinels are the addresses ("host:port") of Sentinels that monitor the master,
	// asked in this order. At least one is required.
	Sentinels []string
	// MasterName is the name the Sentinels know the master by ("mymaster").
	MasterName string
	// SentinelConn configures connections to Sentinels: their own credentials, TLS,
	// timeouts, dialer. Its DB, ClientName and PushHandler are ignored.
	SentinelConn conn.Options
	// NodeConn configures the connections the Monitor opens to data nodes to check
	// their role (the data nodes' credentials, TLS, timeouts).
	NodeConn conn.Options
	// OnMaster is called with the address of the master each time a different one is
	// verified: once from Start, then from the Monitor's goroutine, never
	// concurrently, never after Close has returned. It must not call Close.
	OnMaster func(addr string)
	// OnReplicas, when set, is called with the master's usable replicas (see
	// Monitor.Replicas) each time the set changes: once from Start, then after
	// discoveries on the Monitor's goroutine, under the same rules as OnMaster. The
	// list may be empty.
	OnReplicas func(addrs []string)
}

// Timing of a Monitor.
const (
	recheckInterval = 100 * time.Millisecond // rechecks asked for meanwhile run once, after it
	discoverTimeout = 10 * time.Second       // one discovery by the Monitor's goroutine
	minBackoff      = 50 * time.Millisecond  // before subscribing again after a failure
	maxBackoff      = time.Second
	pollEvery       = time.Second // the subscribed Sentinel is asked for the master this often
)

// Monitor knows the current master of one Sentinel-managed deployment and follows
// its failovers: it subscribes to +promoted-slave and +switch-master on one Sentinel
// (another when that one fails) and, on such an event or when Recheck is called, finds
// the master again and verifies it with ROLE before reporting it through OnMaster.
type Monitor struct {
	cfg    Config
	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	loops  sync.WaitGroup
	wake   chan struct{} // a recheck is wanted

	mu        sync.Mutex
	sentinels []string // preferred first
	master    string   // the last verified master
	hint      string   // the master a +switch-master announced, not yet verified
	replicas  []string // the last set reported to OnReplicas, sorted
	lastErr   error    // of the last discovery, nil when it succeeded
}

// Start finds the master (asking the Sentinels in turn and checking the answer with
// ROLE), reports it through cfg.OnMaster, and starts following failovers. It fails
// with an error matching ErrNoSentinel when no Sentinel answered, ErrUnknownMaster
// when they do not know the name, or ErrNotMaster when the server they name is not
// a master; ctx bounds that first discovery only.
func Start(ctx context.Context, cfg Config) (*Monitor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.SentinelConn.DB = 0
	cfg.SentinelConn.ClientName = ""
	cfg.SentinelConn.PushHandler = nil
	m := &Monitor{cfg: cfg, wake: make(chan struct{}, 1)}
	for _, s := range cfg.Sentinels {
		if !slices.Contains(m.sentinels, s) {
			m.sentinels = append(m.sentinels, s)
		}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	addr, err := m.discover(ctx, "")
	if err != nil {
		m.cancel()
		return nil, err
	}
	m.master = addr
	cfg.OnMaster(addr)
	m.refreshReplicas(ctx)
	m.loops.Add(2)
	go m.run()
	go m.watch()
	return m, nil
}

func (c *Config) validate() error {
	switch {
	case len(c.Sentinels) == 0:
		return fmt.Errorf("%w: no Sentinel address", ErrInvalidConfig)
	case c.MasterName == "":
		return fmt.Errorf("%w: no master name", ErrInvalidConfig)
	case c.OnMaster == nil:
		return fmt.Errorf("%w: no OnMaster", ErrInvalidConfig)
	}
	return nil
}

// Master returns the address of the last verified master.
func (m *Monitor) Master() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.master
}

// LastError returns the error of the last discovery, or nil if it succeeded: why the
// Monitor has not moved on from a master that cannot be reached.
func (m *Monitor) LastError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr
}

// Recheck asks the Monitor to find the master again soon: the caller saw a sign that
// it moved (a connection error, READONLY, LOADING, a connection whose server is not a
// master). It never blocks; calls close together are served by one discovery.
func (m *Monitor) Recheck() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Close stops following failovers and waits for the Monitor's goroutines to end.
func (m *Monitor) Close() error {
	m.cancel()
	m.loops.Wait()
	return nil
}

// run serves rechecks, at most one per recheckInterval.
func (m *Monitor) run() {
	defer m.loops.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.wake:
		}
		m.refresh()
		t := time.NewTimer(recheckInterval)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refresh discovers the master and reports it if it changed.
func (m *Monitor) refresh() {
	m.mu.Lock()
	hint := m.hint
	m.hint = ""
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(m.ctx, discoverTimeout)
	addr, err := m.discover(ctx, hint)
	cancel()
	m.mu.Lock()
	m.lastErr = err
	changed := err == nil && addr != m.master
	if changed {
		m.master = addr
	}
	m.mu.Unlock()
	if changed && m.ctx.Err() == nil {
		m.cfg.OnMaster(addr)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(m.ctx, discoverTimeout)
		m.refreshReplicas(ctx)
		cancel()
	}
}

// refreshReplicas asks for the replicas and reports them to OnReplicas if they
// changed. A failure keeps the last set.
func (m *Monitor) refreshReplicas(ctx context.Context) {
	if m.cfg.OnReplicas == nil {
		return
	}
	addrs, err := m.Replicas(ctx)
	if err != nil {
		return
	}
	slices.Sort(addrs)
	m.mu.Lock()
	changed := m.replicas == nil || !slices.Equal(addrs, m.replicas)
	if changed {
		m.replicas = append([]string{}, addrs...)
	}
	m.mu.Unlock()
	if changed && m.ctx.Err() == nil {
		m.cfg.OnReplicas(addrs)
	}
}

// replicasChanged reports whether addrs differs from the set last reported.
func (m *Monitor) replicasChanged(addrs []string) bool {
	slices.Sort(addrs)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.replicas != nil && !slices.Equal(addrs, m.replicas)
}

// announce records the master a +switch-master named and wakes the recheck.
func (m *Monitor) announce(addr string) {
	m.mu.Lock()
	m.hint = addr
	m.mu.Unlock()
	m.Recheck()
}
