package testserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timing of the harness. Every wait polls a condition against a deadline.
const (
	startTimeout  = 30 * time.Second      // until a started server answers
	stopTimeout   = 30 * time.Second      // for a graceful shutdown
	killTimeout   = 10 * time.Second      // for SIGKILL to be reaped
	signalTimeout = 5 * time.Second       // for SIGSTOP/SIGCONT to take effect
	probeTimeout  = time.Second           // one readiness probe
	pollInterval  = 10 * time.Millisecond // between probes
	doTimeout     = 10 * time.Second      // one Do
	startAttempts = 5                     // port races tolerated by Start
	logTailLines  = 50                    // log lines shown on failure
)

// pingCommand is written by hand, as a client would, to probe readiness.
const pingCommand = "*1\r\n$4\r\nPING\r\n"

// readyReplies are the answers to pingCommand of a server that is serving:
// NOAUTH when it wants a password first, NOPERM when its default user may not
// PING. Anything else, such as LOADING, means not yet.
var readyReplies = []string{"+PONG", "-NOAUTH", "-NOPERM"}

// readyLogLine is what redis-server logs once it listens on its ports.
const readyLogLine = "Ready to accept connections"

// Fields of INFO server.
const (
	processIDKey = "process_id"
	versionKey   = "redis_version"
)

var (
	// errPortTaken marks a start that failed because a port chosen as free was
	// taken before the server could bind it.
	errPortTaken = errors.New("testserver: port taken before the server bound it")

	// ErrNotBuilt marks a server generation whose binary is not in the cache:
	// build-servers.sh (`make servers`) has not run, or could not fetch or build
	// it. [StartGeneration] skips the test then.
	ErrNotBuilt = errors.New("testserver: server generation not built")
)

// Server is a redis-server process started by [Start]. Its ports and
// directory stay the same across [Server.Restart].
type Server struct {
	cfg       Config
	bin       string
	dir       string
	port      int
	tlsPort   int // 0 without TLS
	args      []string
	tlsClient *tls.Config // nil without TLS

	mu       sync.Mutex // serialises the lifecycle methods
	proc     *process   // the current or last run
	paused   bool
	logShown bool // a failure message already carried the log

	versionMu sync.Mutex
	version   string
}

// Start starts a redis-server described by cfg on free loopback ports in a
// temporary directory and returns once it answers PING. It registers a
// cleanup that kills the server if it still runs, waits for it, prints the
// last lines of its log if the test failed, and removes the directory.
//
// Start fails the test if the binary is missing (naming the command that
// installs it) or the server does not come up; when a port chosen as free is
// taken before the server binds it, Start tries again with new ports a few
// times first.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, err := findBinary(cfg.Binary)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	if err := cfg.validate(); err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	cfg.Users = append([]User(nil), cfg.Users...)
	cfg.Args = append([]string(nil), cfg.Args...)
	s := &Server{cfg: cfg, bin: bin, dir: t.TempDir()}
	fileArgs, certs, err := cfg.writeFiles(s.dir)
	if err != nil {
		t.Fatalf("testserver: prepare %s: %v", s.dir, err)
		return nil
	}
	if certs != nil {
		s.tlsClient = certs.client
	}
	// Registered after TempDir, so it runs first: the server is gone before
	// its directory is removed.
	t.Cleanup(func() { s.cleanup(t) })

	nports := 1
	if certs != nil {
		nports = 2
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		ports := FreePorts(t, nports)
		if len(ports) != nports {
			return nil // FreePorts has failed the test
		}
		s.port = ports[0]
		if certs != nil {
			s.tlsPort = ports[1]
		}
		s.args = serverArgs(s.dir, s.port, s.tlsPort, fileArgs, certs, &cfg)
		err := s.run()
		if err == nil {
			return s
		}
		if errors.Is(err, errPortTaken) && attempt < startAttempts {
			t.Logf("testserver: %v; trying other ports", err)
			continue
		}
		s.fatalWithLog(t, "start", err)
		return nil
	}
}

// Addr returns the plain TCP address, "127.0.0.1:port".
func (s *Server) Addr() string { return hostPort(s.port) }

// TLSAddr returns the TLS address, or "" unless the server serves TLS.
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return hostPort(s.tlsPort)
}

// Port returns the plain TCP port.
func (s *Server) Port() int { return s.port }

// TLSPort returns the TLS port, or 0 unless the server serves TLS.
func (s *Server) TLSPort() int { return s.tlsPort }

// Dir returns the server's working directory, where its log, ACL file,
// certificates and any persistence files live.
func (s *Server) Dir() string { return s.dir }

// ClientTLSConfig returns a new TLS client configuration that trusts the
// generated CA, with ServerName "localhost" (the certificate is valid for
// that name, 127.0.0.1 and ::1) and, with ClientAuth, the generated client
// certificate. It returns nil unless the server serves TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.tlsClient == nil {
		return nil
	}
	return s.tlsClient.Clone()
}

// Logs returns the server's log so far, across restarts: what it wrote to
// standard output and error.
func (s *Server) Logs() string {
	b, err := os.ReadFile(filepath.Join(s.dir, logFile))
	if err != nil {
		return ""
	}
	return string(b)
}

// Kill kills the server and its forked children with SIGKILL and waits until
// it has exited. Without persistence its data is lost.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.running(t, "Kill")
	if p == nil {
		return
	}
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		t.Fatalf("testserver: Kill: %v", err)
		return
	}
	s.paused = false
	if !p.wait(killTimeout) {
		t.Fatalf("testserver: Kill: process %d has not exited after %v", p.pid(), killTimeout)
	}
}

// Stop shuts the server down gracefully with SIGTERM, as a service manager
// would, and waits until it has exited: the server flushes its AOF and, if
// Args configured save points, writes an RDB file. A paused server is
// resumed to do so. Stop kills a server that has not exited within 30s and
// fails the test.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.running(t, "Stop")
	if p == nil {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("testserver: Stop: %v", err)
		return
	}
	if s.paused {
		// The SIGTERM stays pending until the process runs again.
		if err := p.signalGroup(syscall.SIGCONT); err != nil {
			t.Fatalf("testserver: Stop: %v", err)
			return
		}
		s.paused = false
	}
	if !p.wait(stopTimeout) {
		_ = p.signalGroup(syscall.SIGKILL)
		p.wait(killTimeout)
		s.fatalWithLog(t, "Stop", fmt.Errorf("process %d did not shut down within %v and was killed", p.pid(), stopTimeout))
	}
}

// Restart starts the server again after Kill or Stop (or a crash), on the
// same ports, in the same directory and with the same arguments, and waits
// until it answers PING. It fails the test if the server is still running.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		t.Fatalf("testserver: Restart: the server on %s is still running; Stop or Kill it first", s.Addr())
		return
	}
	if err := s.run(); err != nil {
		s.fatalWithLog(t, "Restart", err)
	}
}

// Pause stops the server and its children with SIGSTOP and waits until the
// kernel reports them stopped. The kernel still accepts connections on its
// behalf, but nothing is answered: for tests of timeouts against an
// unresponsive server.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.running(t, "Pause")
	if p == nil {
		return
	}
	if s.paused {
		t.Fatalf("testserver: Pause: the server on %s is already paused", s.Addr())
		return
	}
	if err := p.signalGroup(syscall.SIGSTOP); err != nil {
		t.Fatalf("testserver: Pause: %v", err)
		return
	}
	s.paused = true
	if err := p.waitState(true, signalTimeout); err != nil {
		t.Fatalf("testserver: Pause: %v", err)
	}
}

// Resume continues a paused server with SIGCONT and waits until the kernel
// reports it running.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.running(t, "Resume")
	if p == nil {
		return
	}
	if !s.paused {
		t.Fatalf("testserver: Resume: the server on %s is not paused", s.Addr())
		return
	}
	if err := p.signalGroup(syscall.SIGCONT); err != nil {
		t.Fatalf("testserver: Resume: %v", err)
		return
	}
	s.paused = false
	if err := p.waitState(false, signalTimeout); err != nil {
		t.Fatalf("testserver: Resume: %v", err)
	}
}

// running returns the running process or fails the test. The caller holds mu.
func (s *Server) running(t testing.TB, op string) *process {
	t.Helper()
	if s.proc == nil || s.proc.exited() {
		t.Fatalf("testserver: %s: the server on %s is not running", op, s.Addr())
		return nil
	}
	return s.proc
}

// run launches the server with s.args and waits until it is ready; a server
// that does not get ready is killed. The caller holds mu.
func (s *Server) run() error {
	p, err := launch(s.bin, s.args, s.dir, filepath.Join(s.dir, logFile))
	if err != nil {
		return err
	}
	s.proc = p
	s.paused = false
	if err := s.waitReady(p); err != nil {
		_ = p.signalGroup(syscall.SIGKILL)
		p.wait(killTimeout)
		return err
	}
	return nil
}

// waitReady polls until the process answers PING on its port, or exits, or
// the start timeout passes.
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if p.exited() {
			return p.exitError()
		}
		if probe(s.Addr()) && s.isOurs(p) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server (pid %d) did not answer PING on %s within %v", p.pid(), s.Addr(), startTimeout)
		}
		p.wait(pollInterval)
	}
}

// probe reports whether a server on addr answers PING, by hand, on a fresh
// connection. NOAUTH and NOPERM count as answers: the server is serving.
func probe(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return false
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return false
	}
	if _, err := conn.Write([]byte(pingCommand)); err != nil {
		return false
	}
	line, err := readLine(newReader(conn))
	if err != nil {
		return false
	}
	for _, ready := range readyReplies {
		if bytes.HasPrefix(line, []byte(ready)) {
			return true
		}
	}
	return false
}

// isOurs reports whether the server that answered on the port is process p.
// An answer alone does not prove it: if another process took the port, p
// fails to bind and exits, but a probe may reach the other one first.
//
// p logs its ready line only once it has bound its ports, so that line in
// this run's log settles it. When Args moved or silenced the log, the
// process id in INFO does, if the harness can run INFO; if it cannot, the
// answer is trusted.
func (s *Server) isOurs(p *process) bool {
	if strings.Contains(p.runLog(), readyLogLine) {
		return true
	}
	if s.customDefaultUser() {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	info, err := s.DoErr(ctx, "INFO", "server")
	var rerr *ReplyError
	if errors.As(err, &rerr) {
		return true // such as NOAUTH, when Args set a password
	}
	return err == nil && infoField(info, processIDKey) == strconv.Itoa(p.pid())
}

// customDefaultUser reports whether Config.Users redefines the default user,
// whose password and permissions the harness then does not know.
func (s *Server) customDefaultUser() bool {
	for _, u := range s.cfg.Users {
		if u.Name == "default" {
			return true
		}
	}
	return false
}

// fatalWithLog fails the test with err and the tail of the server log, which
// the cleanup then does not repeat. The caller holds mu.
func (s *Server) fatalWithLog(t testing.TB, op string, err error) {
	t.Helper()
	s.logShown = true
	t.Fatalf("testserver: %s %s (dir %s): %v\nlast lines of the server log:\n%s",
		op, s.Addr(), s.dir, err, tail(s.Logs(), logTailLines))
}

// cleanup kills a server still running, waits for it to be reaped and, if
// the test failed, shows the end of the log.
func (s *Server) cleanup(t testing.TB) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.proc; p != nil && !p.exited() {
		_ = p.signalGroup(syscall.SIGKILL)
		if !p.wait(killTimeout) {
			t.Errorf("testserver: process %d has not exited %v after SIGKILL", p.pid(), killTimeout)
		}
	}
	if t.Failed() && !s.logShown {
		t.Logf("testserver: last lines of the log of the server on %s (dir %s):\n%s",
			s.Addr(), s.dir, tail(s.Logs(), logTailLines))
	}
}

func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
