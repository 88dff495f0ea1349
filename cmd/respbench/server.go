package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timing of the embedded server.
const (
	serverStartTimeout = 15 * time.Second
	serverStopTimeout  = 10 * time.Second
	serverPollInterval = 10 * time.Millisecond
	serverStartTries   = 5 // a port found free can be taken before the server binds it
)

// installHint is printed when redis-server or redis-benchmark is missing.
const installHint = "sudo apt-get install -y redis-server redis-tools"

// errNoServerBinary means redis-server is not installed.
var errNoServerBinary = errors.New("respbench: redis-server not found in PATH")

// server is the redis-server respbench starts when no -addr is given: on a free
// loopback port, without persistence, in a temporary directory it removes at the end.
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been reaped
}

// startServer starts the embedded server and returns once it answers PING.
func startServer(ctx context.Context, serverBin string) (*server, error) {
	bin, err := lookServer(serverBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "respbench-")
	if err != nil {
		return nil, fmt.Errorf("respbench: temporary directory: %w", err)
	}
	s, err := launchRetrying(ctx, bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// launchRetrying runs launch until the server starts, at most serverStartTries times:
// a port found free can be taken before the server binds it.
func launchRetrying(ctx context.Context, bin, dir string, extra ...string) (*server, error) {
	for try := 1; ; try++ {
		s, err := launch(ctx, bin, dir, extra...)
		if err == nil || try == serverStartTries || ctx.Err() != nil {
			return s, err
		}
	}
}

// launch runs redis-server once on a port that was free a moment ago, with extra
// arguments after its own.
func launch(ctx context.Context, bin, dir string, extra ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis.log")
	args := []string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--logfile", logPath,
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("respbench: start redis-server: %w", err)
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.done)
	}()
	deadline := time.Now().Add(serverStartTimeout)
	for {
		if pingServer(s.addr) == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("respbench: redis-server exited at start: %s", logTail(logPath))
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		case <-time.After(serverPollInterval):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("respbench: redis-server did not answer within %v: %s", serverStartTimeout, logTail(logPath))
		}
	}
}

// stop shuts the server down (SIGTERM, then SIGKILL) and removes its directory.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(serverStopTimeout):
		s.kill()
	}
	os.RemoveAll(s.dir)
}

func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// freePort returns a loopback port the kernel just handed out.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("respbench: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pingServer sends PING by hand and expects +PONG (or an auth error, which also means
// the server is serving).
func pingServer(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	return fmt.Errorf("respbench: PING answered %q", strings.TrimSpace(line))
}

// logTail returns the last lines of the server log, for an error message.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}
