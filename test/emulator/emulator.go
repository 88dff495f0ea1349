package emulator

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// Config describes an emulator to start.
type Config struct {
	// Backend is the address of the real Redis 7 server behind the emulator.
	Backend string
	// Profile is the server the emulator answers as; empty means Redis7.
	Profile Profile
	// AdminUser and AdminPassword authenticate the emulator's own backend
	// connection, which checks permissions (ACL DRYRUN) and runs emulated commands.
	// It needs ACL DRYRUN, SELECT, EVAL/EVALSHA and the scripts' TYPE, GET, SET and
	// DEL. Both empty means the default user without AUTH; a password alone
	// authenticates the default user.
	AdminUser, AdminPassword string
	// RewriteAddr, when set, maps a backend node address ("127.0.0.1:7001") to the
	// address clients should use instead (its emulator's), in Cluster topology replies
	// and MOVED/ASK errors; see cluster.go.
	RewriteAddr func(addr string) string
}

// Emulator is a proxy in front of a real Redis 7 server that answers as the server of
// its profile. Each client connection gets a backend connection of its own,
// authenticated as the client authenticates; see the package documentation.
type Emulator struct {
	cfg   Config
	f     features
	ln    net.Listener
	srv   *redcon.Server
	admin *admin
	hooks *hooks

	wg     sync.WaitGroup // redcon's per-connection goroutines and the sessions
	served chan struct{}  // closed when the accept loop returns
	conns  atomic.Int64

	mu       sync.Mutex
	sessions map[*session]struct{}
	stopped  bool
}

// Start starts an emulator for cfg on a free loopback port and returns once it
// accepts connections and its admin connection has reached the backend. It stops in
// t.Cleanup: every connection is closed and every goroutine has ended when the
// cleanup returns. Start fails the test on an unknown profile or an unreachable
// backend.
func Start(t testing.TB, cfg Config) *Emulator {
	t.Helper()
	if cfg.Profile == "" {
		cfg.Profile = Redis7
	}
	f, ok := cfg.Profile.features()
	if !ok {
		t.Fatalf("emulator: unknown profile %q", cfg.Profile)
		return nil
	}
	if cfg.Backend == "" {
		t.Fatalf("emulator: Config.Backend is empty")
		return nil
	}
	e := &Emulator{
		cfg:      cfg,
		f:        f,
		admin:    newAdmin(cfg.Backend, cfg.AdminUser, cfg.AdminPassword),
		hooks:    newHooks(),
		served:   make(chan struct{}),
		sessions: make(map[*session]struct{}),
	}
	if err := e.admin.ping(); err != nil {
		e.admin.close()
		t.Fatalf("emulator: backend %s: %v", cfg.Backend, err)
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.admin.close()
		t.Fatalf("emulator: listen: %v", err)
		return nil
	}
	e.ln = ln
	e.srv = redcon.NewServerNetwork("tcp", ln.Addr().String(), e.handleFirst, e.accept, e.closed)
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(ln)
	}()
	t.Cleanup(e.stop)
	return e
}

// Addr returns the emulator's address, "127.0.0.1:port".
func (e *Emulator) Addr() string { return e.ln.Addr().String() }

// Conns returns the number of open client connections. A connection counts until it
// is closed and, once it sent a command, until its goroutines have ended: after a
// CLIENT KILL, Conns dropping means the command in hand was abandoned or completed.
func (e *Emulator) Conns() int { return int(e.conns.Load()) }

// Count returns how many commands received from clients (all connections, since
// Start or Reset) have the given name: the upper-case command name ("SET",
// "EVALSHA"), a container command with its subcommand ("CLIENT KILL", "SCRIPT
// LOAD"), or a SET with one of its options ("SET IFEQ", "SET NX", "SET PX"). A SET
// IFEQ counts under both "SET" and "SET IFEQ". The name is case-insensitive.
func (e *Emulator) Count(name string) int64 {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[hookName(name)]
}

// Commands returns every command received from clients since Start or Reset, in the
// order received, across all connections; each is a fresh copy.
func (e *Emulator) Commands() [][]string {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([][]string, len(h.log))
	for i, c := range h.log {
		out[i] = append([]string(nil), c...)
	}
	return out
}

// Reset clears the counters, the command log and every hook.
func (e *Emulator) Reset() {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reset()
}

// Delay holds every command matching name (see [Emulator.Count]) for d before it is
// forwarded or executed, until Reset. A command held on a connection whose backend
// connection is killed meanwhile (CLIENT KILL, server death) never runs. If several
// delays match, the longest applies.
func (e *Emulator) Delay(name string, d time.Duration) {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	h.delays[hookName(name)] = d
}

// DropConn arms a one-shot fault: the next command matching name (see
// [Emulator.Count]), on any connection, closes its client connection, BeforeForward
// without running it, AfterForward after it ran on the backend but before the reply
// is delivered. Each call arms one drop.
func (e *Emulator) DropConn(name string, when DropWhen) {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drops = append(h.drops, drop{name: hookName(name), when: when})
}

// ForceReply makes every command matching name (see [Emulator.Count]) get raw as its
// reply, written as it is ("-NOPERM …\r\n", "-ERR boom\r\n"), without reaching the
// backend, until Reset.
func (e *Emulator) ForceReply(name string, raw string) {
	h := e.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forced[hookName(name)] = []byte(raw)
}

// accept is redcon's accept callback, on its accept goroutine.
func (e *Emulator) accept(redcon.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	e.wg.Add(1) // redcon's goroutine for the connection; Done in closed
	e.conns.Add(1)
	return true
}

// closed is redcon's closed callback, the last thing its goroutine for a connection
// does. A connection detached into a session is counted down by the session.
func (e *Emulator) closed(c redcon.Conn, _ error) {
	if c.Context() == nil {
		e.conns.Add(-1)
	}
	e.wg.Done()
}

// handleFirst is redcon's handler. It is called once per connection, with its first
// command: the connection is detached from redcon and a session takes it over.
func (e *Emulator) handleFirst(c redcon.Conn, cmd redcon.Command) {
	first := e.receive(cmd)
	dc := c.Detach()
	c.SetContext(true)
	be, err := dialBackend(e.cfg.Backend)
	if err != nil {
		// The server is down: the client sees its connection closed, as it would.
		dc.NetConn().Close()
		e.conns.Add(-1)
		return
	}
	s := newSession(e, dc, be)
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		dc.NetConn().Close()
		be.close()
		e.conns.Add(-1)
		return
	}
	e.sessions[s] = struct{}{}
	e.wg.Add(1) // Done in sessionEnded
	e.mu.Unlock()
	s.start(first)
}

// receive logs and counts a command received from a client.
func (e *Emulator) receive(cmd redcon.Command) command {
	return command{args: cmd.Args, raw: cmd.Raw, names: e.hooks.record(cmd.Args)}
}

// sessionEnded is called by a session whose goroutines have all ended but the caller.
func (e *Emulator) sessionEnded(s *session) {
	e.mu.Lock()
	delete(e.sessions, s)
	e.mu.Unlock()
	e.conns.Add(-1)
	e.wg.Done()
}

// stop closes the listener and every connection and waits for every goroutine.
func (e *Emulator) stop() {
	_ = e.srv.Close() // the accept loop then closes the connections still with redcon
	_ = e.ln.Close()  // in case Serve had not started yet, when srv.Close has nothing to close
	<-e.served
	e.mu.Lock()
	e.stopped = true
	for s := range e.sessions {
		s.kill()
	}
	e.mu.Unlock()
	e.admin.close()
	e.wg.Wait()
}
