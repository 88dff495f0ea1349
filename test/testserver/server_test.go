package testserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestStartServesAndStops(t *testing.T) {
	s := Start(t, Config{})
	if want := "127.0.0.1:" + strconv.Itoa(s.Port()); s.Addr() != want {
		t.Errorf("Addr() = %q, want %q", s.Addr(), want)
	}
	if s.TLSAddr() != "" || s.TLSPort() != 0 || s.ClientTLSConfig() != nil {
		t.Errorf("a server without TLS has TLSAddr %q, TLSPort %d, ClientTLSConfig %v", s.TLSAddr(), s.TLSPort(), s.ClientTLSConfig())
	}
	if info, err := os.Stat(s.Dir()); err != nil || !info.IsDir() {
		t.Errorf("Dir() %q: %v", s.Dir(), err)
	}

	checks := []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "k", "v"}, "OK"},
		{[]string{"GET", "k"}, "v"},
		{[]string{"GET", "missing"}, "(nil)"},
		{[]string{"INCR", "n"}, "1"},
		{[]string{"RPUSH", "l", "a", "b"}, "2"},
		{[]string{"LRANGE", "l", "0", "-1"}, "a\nb"},
		// The harness's defaults: no persistence, the temporary directory,
		// loopback only.
		{[]string{"CONFIG", "GET", "appendonly"}, "appendonly\nno"},
		{[]string{"CONFIG", "GET", "save"}, "save\n"},
		{[]string{"CONFIG", "GET", "dir"}, "dir\n" + s.Dir()},
		{[]string{"CONFIG", "GET", "bind"}, "bind\n127.0.0.1"},
		{[]string{"CONFIG", "GET", "unixsocket"}, "unixsocket\n"},
	}
	for _, c := range checks {
		if got := s.Do(t, c.args...); got != c.want {
			t.Errorf("%v = %q, want %q", c.args, got, c.want)
		}
	}

	_, err := s.DoErr(testContext(t), "NOSUCHCOMMAND")
	var rerr *ReplyError
	if !errors.As(err, &rerr) || rerr.Prefix() != "ERR" {
		t.Errorf("unknown command: err = %v, want an ERR reply", err)
	}

	out, err := exec.Command(s.bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Version(t); !strings.Contains(string(out), "v="+v+" ") {
		t.Errorf("Version() = %q, but %s --version says %q", v, s.bin, out)
	}
	if !strings.Contains(s.Logs(), "Ready to accept connections") {
		t.Errorf("Logs() lacks the ready line:\n%s", s.Logs())
	}

	s.Stop(t)
	_, err = s.DoErr(testContext(t), "PING")
	if err == nil || errors.As(err, &rerr) {
		t.Fatalf("PING after Stop: err = %v, want a transport error", err)
	}
}

// TestParallelServersGetDistinctPorts starts servers from parallel tests.
func TestParallelServersGetDistinctPorts(t *testing.T) {
	const n = 4
	var mu sync.Mutex
	ports := make(map[int]string)
	t.Run("group", func(t *testing.T) {
		for i := range n {
			name := "server" + strconv.Itoa(i)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := Start(t, Config{})
				s.Do(t, "SET", "owner", name)
				if got := s.Do(t, "GET", "owner"); got != name {
					t.Errorf("GET owner = %q, want %q: another server answered", got, name)
				}
				mu.Lock()
				defer mu.Unlock()
				if other, ok := ports[s.Port()]; ok {
					t.Errorf("port %d given to %s and %s", s.Port(), other, name)
				}
				ports[s.Port()] = name
			})
		}
	})
	if len(ports) != n {
		t.Fatalf("%d distinct ports for %d servers", len(ports), n)
	}
}

func TestTwoServersAreIndependent(t *testing.T) {
	a := Start(t, Config{})
	b := Start(t, Config{})
	if a.Port() == b.Port() || a.Dir() == b.Dir() {
		t.Fatalf("two servers share port %d or dir %q", a.Port(), a.Dir())
	}
	a.Do(t, "SET", "k", "a")
	if got := b.Do(t, "GET", "k"); got != "(nil)" {
		t.Fatalf("GET k on the second server = %q, want (nil)", got)
	}
}

func TestKillThenRestartKeepsPortAndLosesData(t *testing.T) {
	s := Start(t, Config{})
	port := s.Port()
	s.Do(t, "SET", "k", "v")
	pid := s.proc.pid()

	s.Kill(t)
	if _, err := s.DoErr(testContext(t), "PING"); err == nil {
		t.Fatal("PING after Kill succeeded")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d after Kill: %v, want ESRCH (gone and reaped)", pid, err)
	}

	s.Restart(t)
	if s.Port() != port {
		t.Fatalf("Port() after Restart = %d, want %d", s.Port(), port)
	}
	if got := s.Do(t, "GET", "k"); got != "(nil)" {
		t.Fatalf("GET k after Kill and Restart = %q, want (nil): persistence is off", got)
	}
}

func TestStopThenRestartKeepsDataWithAOF(t *testing.T) {
	s := Start(t, Config{Args: []string{"--appendonly", "yes"}})
	s.Do(t, "SET", "k", "v")
	s.Stop(t)
	if _, err := os.Stat(filepath.Join(s.Dir(), "appendonlydir")); err != nil {
		t.Fatalf("no AOF in the server's directory: %v", err)
	}
	s.Restart(t)
	if got := s.Do(t, "GET", "k"); got != "v" {
		t.Fatalf("GET k after Stop and Restart with AOF = %q, want v", got)
	}
}

func TestPauseMakesServerUnresponsiveUntilResume(t *testing.T) {
	s := Start(t, Config{})
	s.Pause(t)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.DoErr(ctx, "PING")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PING to a paused server: err = %v, want a deadline error", err)
	}

	s.Resume(t)
	if got := s.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING after Resume = %q", got)
	}

	// Stop resumes a paused server so that it can shut down.
	s.Pause(t)
	s.Stop(t)
}

func TestMisusedLifecycleFailsTheTest(t *testing.T) {
	s := Start(t, Config{})

	f := newFakeTB(t)
	s.Restart(f)
	if msg := f.fatal(t); !strings.Contains(msg, "still running") {
		t.Errorf("Restart of a running server: %q", msg)
	}
	f = newFakeTB(t)
	s.Resume(f)
	if msg := f.fatal(t); !strings.Contains(msg, "not paused") {
		t.Errorf("Resume of a running server: %q", msg)
	}

	s.Kill(t)
	for name, op := range map[string]func(testing.TB){"Kill": s.Kill, "Stop": s.Stop, "Pause": s.Pause} {
		f := newFakeTB(t)
		op(f)
		if msg := f.fatal(t); !strings.Contains(msg, "not running") {
			t.Errorf("%s of a killed server: %q", name, msg)
		}
	}
}

// TestMissingBinaryNamesTheInstallCommand asserts the message itself, through
// a testing.TB that records Fatalf.
func TestMissingBinaryNamesTheInstallCommand(t *testing.T) {
	f := newFakeTB(t)
	if s := Start(f, Config{Binary: "/nonexistent/redis-server"}); s != nil {
		t.Fatal("Start with a missing binary returned a server")
	}
	msg := f.fatal(t)
	for _, want := range []string{
		"/nonexistent/redis-server",
		"apt-get install -y redis-server redis-sentinel redis-tools",
		"make test",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestBadArgumentsFailWithTheServerLog(t *testing.T) {
	f := newFakeTB(t)
	if s := Start(f, Config{Args: []string{"--no-such-directive", "1"}}); s != nil {
		t.Fatal("Start with a bad argument returned a server")
	}
	msg := f.fatal(t)
	if !strings.Contains(msg, "FATAL CONFIG FILE ERROR") || !strings.Contains(msg, "no-such-directive") {
		t.Errorf("message lacks the server's complaint: %q", msg)
	}
	if len(f.logs) != 0 {
		t.Errorf("Start retried a failure that is not a port race: %q", f.logs)
	}
}

// TestCleanupKillsAndShowsLogOnFailure runs the cleanup Start registered, as
// a failed test would.
func TestCleanupKillsAndShowsLogOnFailure(t *testing.T) {
	f := newFakeTB(t)
	s := Start(f, Config{})
	if s == nil {
		t.Fatalf("Start: %s", f.fatal(t))
	}
	pid := s.proc.pid()
	f.failed = true
	f.runCleanups()

	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("process %d after cleanup: %v, want ESRCH (gone and reaped)", pid, err)
	}
	if logs := strings.Join(f.logs, "\n"); !strings.Contains(logs, "Ready to accept connections") {
		t.Fatalf("cleanup of a failed test did not show the log: %q", logs)
	}
}

// TestPortRaceIsDetected launches a second server on the port of a running
// one: it must not take the running server's answers for its own.
func TestPortRaceIsDetected(t *testing.T) {
	a := Start(t, Config{})
	bin, err := findBinary("")
	if err != nil {
		t.Fatal(err)
	}
	b := &Server{bin: bin, dir: t.TempDir(), port: a.Port()}
	b.args = serverArgs(b.dir, b.port, 0, nil, nil, &Config{})
	b.mu.Lock()
	err = b.run()
	b.mu.Unlock()
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("run on a taken port: err = %v, want errPortTaken", err)
	}
	if !b.proc.exited() {
		t.Fatal("the server that lost the race still runs")
	}
	if got := a.Do(t, "PING"); got != "PONG" {
		t.Fatalf("the first server: PING = %q", got)
	}
}
