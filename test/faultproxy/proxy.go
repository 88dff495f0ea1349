package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Direction says which way a fault applies.
type Direction int

const (
	// ToServer is the client-to-server stream (requests).
	ToServer Direction = 1 << iota
	// ToClient is the server-to-client stream (replies).
	ToClient
	// Both is both streams.
	Both = ToServer | ToClient
)

// String names the direction.
func (d Direction) String() string {
	switch d {
	case ToServer:
		return "to-server"
	case ToClient:
		return "to-client"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// faults is what one direction suffers now. The zero value forwards freely.
type faults struct {
	latency   time.Duration
	bandwidth int // bytes per second; 0 means unlimited
	blackhole bool
	paused    bool
	cutAfter  int64 // bytes still allowed before the connection is reset; -1 means no cut
	halfClose bool
}

func healthy() faults { return faults{cutAfter: -1} }

// Stats counts what the proxy did since it started.
type Stats struct {
	Accepted  int   // connections accepted
	Open      int   // connections open now
	ToServer  int64 // bytes delivered to the server
	ToClient  int64 // bytes delivered to clients
	Dropped   int64 // bytes read and thrown away by a blackhole
	Resets    int   // connections aborted by ResetAll or a cut
	HalfClose int   // half-closes sent
}

// Proxy forwards TCP connections from its own loopback address to a target,
// with switchable faults.
type Proxy struct {
	ln     net.Listener
	target string
	dial   func() (net.Conn, error)

	mu      sync.Mutex
	dirs    map[Direction]*faults // ToServer and ToClient only
	changed chan struct{}         // closed and replaced on every change, to wake waiters
	conns   map[*link]struct{}
	stats   Stats
	closed  bool
	done    chan struct{}

	wg sync.WaitGroup
}

// Start runs a proxy to target (host:port) on a free loopback port and
// closes it when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// New runs a proxy to target on a free loopback port. The caller closes it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := newProxy(ln, func() (net.Conn, error) { return net.DialTimeout("tcp", target, 5*time.Second) })
	p.target = target
	p.wg.Go(p.accept)
	return p, nil
}

func newProxy(ln net.Listener, dial func() (net.Conn, error)) *Proxy {
	return &Proxy{
		ln:      ln,
		dial:    dial,
		dirs:    map[Direction]*faults{ToServer: ptr(healthy()), ToClient: ptr(healthy())},
		changed: make(chan struct{}),
		conns:   make(map[*link]struct{}),
		done:    make(chan struct{}),
	}
}

func ptr[T any](v T) *T { return &v }

// Addr is the proxy's listening address, to give the client.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, aborts every connection and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	links := p.linksLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.abort()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := p.dial()
		if err != nil {
			abortConn(c)
			continue
		}
		l := &link{p: p, client: c, server: server, dead: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.abort()
			return
		}
		p.conns[l] = struct{}{}
		p.stats.Accepted++
		p.mu.Unlock()
		l.start()
	}
}

// change applies fn to the faults of each direction in dir and wakes every
// pump so the new faults apply to traffic already flowing.
func (p *Proxy) change(dir Direction, fn func(*faults)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range []Direction{ToServer, ToClient} {
		if dir&d != 0 {
			fn(p.dirs[d])
		}
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// SetLatency delays every chunk in dir by d (0 removes the delay).
func (p *Proxy) SetLatency(dir Direction, d time.Duration) {
	p.change(dir, func(f *faults) { f.latency = d })
}

// SetBandwidth limits dir to bytesPerSec (0 removes the limit).
func (p *Proxy) SetBandwidth(dir Direction, bytesPerSec int) {
	p.change(dir, func(f *faults) { f.bandwidth = bytesPerSec })
}

// Blackhole drops everything sent in dir from now on, while the connections
// stay open: the sender's writes succeed and nothing arrives.
func (p *Proxy) Blackhole(dir Direction) {
	p.change(dir, func(f *faults) { f.blackhole = true })
}

// Pause holds back everything in dir until Resume, without reading it.
func (p *Proxy) Pause(dir Direction) {
	p.change(dir, func(f *faults) { f.paused = true })
}

// Resume delivers what Pause held back and lets dir flow again.
func (p *Proxy) Resume(dir Direction) {
	p.change(dir, func(f *faults) { f.paused = false })
}

// CutAfter lets n more bytes through in dir, summed over every connection,
// then resets the connection whose bytes went past n (n = 0 resets the next
// connection to send anything in dir). A negative n removes the cut.
func (p *Proxy) CutAfter(dir Direction, n int64) {
	p.change(dir, func(f *faults) { f.cutAfter = n })
}

// HalfClose shuts the write side toward the receiver of dir on every open
// connection (the receiver reads EOF while the other direction still flows),
// and on every connection accepted until Heal.
func (p *Proxy) HalfClose(dir Direction) {
	p.change(dir, func(f *faults) { f.halfClose = true })
}

// ResetAll aborts every open connection with a TCP reset to both ends. New
// connections are still accepted.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	links := p.linksLocked()
	p.mu.Unlock()
	for _, l := range links {
		if l.abort() {
			p.noteFault(1, 0)
		}
	}
}

// Heal removes every fault in both directions; paused bytes flow again.
// Connections already reset or half-closed stay so.
func (p *Proxy) Heal() {
	p.change(Both, func(f *faults) { *f = healthy() })
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Open = len(p.conns)
	return s
}

func (p *Proxy) linksLocked() []*link {
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	return links
}

// now returns dir's faults and the channel that closes when they change.
func (p *Proxy) now(dir Direction) (faults, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.dirs[dir], p.changed
}

// take accounts n bytes about to be delivered in dir against a cut: it
// returns how many may pass and whether the connection must then be reset.
func (p *Proxy) take(dir Direction, n int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.dirs[dir]
	if f.cutAfter < 0 {
		return n, false
	}
	if int64(n) <= f.cutAfter {
		f.cutAfter -= int64(n)
		return n, false
	}
	allowed := int(f.cutAfter)
	f.cutAfter = 0
	return allowed, true
}

func (p *Proxy) count(dir Direction, delivered, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir == ToServer {
		p.stats.ToServer += int64(delivered)
	} else {
		p.stats.ToClient += int64(delivered)
	}
	p.stats.Dropped += int64(dropped)
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, l)
}

func (p *Proxy) noteFault(resets, halfCloses int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Resets += resets
	p.stats.HalfClose += halfCloses
}

// abortConn closes c with SO_LINGER 0 so the peer sees a reset.
func abortConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
