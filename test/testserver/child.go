package testserver

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ChildEnv is set to "1" in the environment of a process started by
// StartChild, so the test it runs knows it is the child.
const ChildEnv = "RESPIRE_TEST_CHILD"

// childLinePrefix marks the lines a child writes for its parent, so the test
// framework's own output cannot be mistaken for them.
const childLinePrefix = "respire-child: "

// Child is the test binary re-executed to run one test function as a
// separate process, so that a test can freeze (SIGSTOP) or kill a process
// that holds client state: a lock holder paused past its lease. Parent and
// child talk in lines: the child writes them with ChildSay and reads the
// parent's with ChildListen; the parent writes with Send and waits for one
// with Expect.
type Child struct {
	proc  *process
	stdin *os.File
	seen  int // bytes of the log already searched by Expect
}

// IsChild reports whether this process was started by StartChild.
func IsChild() bool { return os.Getenv(ChildEnv) == "1" }

// StartChild runs the test binary again with only the test named test (an
// exact top-level test name), ChildEnv=1 and the extra environment env
// ("KEY=value"). The child is in its own process group, dies with the test
// binary on Linux, and is killed when the test ends.
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "child.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("testserver: StartChild: %v", err)
	}
	defer log.Close()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatalf("testserver: StartChild: %v", err)
	}
	defer stdinR.Close() // the child holds its own copy
	// No test timeout of its own: it dies with its parent.
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(append(os.Environ(), ChildEnv+"=1"), env...)
	cmd.Stdin = stdinR
	p, err := launchCmd(cmd, log, logPath, 0)
	if err != nil {
		stdinW.Close()
		t.Fatalf("testserver: StartChild: %v", err)
	}
	c := &Child{proc: p, stdin: stdinW}
	t.Cleanup(func() {
		stdinW.Close()
		_ = p.signalGroup(syscall.SIGKILL)
		_ = p.signalGroup(syscall.SIGCONT)
		p.wait(killTimeout)
	})
	return c
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.proc.pid() }

// Send writes one line to the child's standard input.
func (c *Child) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		t.Fatalf("testserver: Child.Send: %v", err)
	}
}

// Expect waits up to timeout for the next line the child said with ChildSay
// that starts with prefix, and returns the rest of it. Lines said before it
// with other prefixes are skipped. It fails the test, with the child's
// output, if the child exits or the time runs out first.
func (c *Child) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := c.proc.runLog()
		for c.seen < len(out) {
			end := strings.IndexByte(out[c.seen:], '\n')
			if end < 0 {
				break
			}
			line := out[c.seen : c.seen+end]
			c.seen += end + 1
			if rest, ok := strings.CutPrefix(line, childLinePrefix+prefix); ok {
				return rest
			}
		}
		if c.proc.exited() && c.seen >= len(c.proc.runLog()) {
			t.Fatalf("testserver: child exited (%v) before saying %q; output:\n%s", c.proc.err, prefix, tail(out, 40))
			return ""
		}
		if time.Now().After(deadline) {
			t.Fatalf("testserver: child did not say %q within %v; output:\n%s", prefix, timeout, tail(out, 40))
			return ""
		}
		c.proc.wait(pollInterval)
	}
}

// Pause stops the child with SIGSTOP and waits until the kernel reports it
// stopped: its timers, keep-alives and sockets freeze mid-flight.
func (c *Child) Pause(t testing.TB) {
	t.Helper()
	c.signal(t, syscall.SIGSTOP, true)
}

// Resume continues a paused child with SIGCONT.
func (c *Child) Resume(t testing.TB) {
	t.Helper()
	c.signal(t, syscall.SIGCONT, false)
}

func (c *Child) signal(t testing.TB, sig syscall.Signal, stopped bool) {
	t.Helper()
	if err := c.proc.signalGroup(sig); err != nil {
		t.Fatalf("testserver: child %v: %v", sig, err)
	}
	if err := c.proc.waitState(stopped, signalTimeout); err != nil {
		t.Fatalf("testserver: child %v: %v", sig, err)
	}
}

// Kill kills the child with SIGKILL and waits until it has been reaped.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	_ = c.proc.signalGroup(syscall.SIGKILL)
	_ = c.proc.signalGroup(syscall.SIGCONT)
	if !c.proc.wait(killTimeout) {
		t.Fatalf("testserver: child %d not reaped after SIGKILL", c.Pid())
	}
}

// Wait waits up to timeout for the child to exit and returns its exit error
// (nil when its test passed) and its whole output.
func (c *Child) Wait(t testing.TB, timeout time.Duration) (string, error) {
	t.Helper()
	if !c.proc.wait(timeout) {
		t.Fatalf("testserver: child %d still running after %v; output:\n%s", c.Pid(), timeout, tail(c.proc.runLog(), 40))
	}
	return c.proc.runLog(), c.proc.err
}

// ChildSay writes a line for the parent's Expect. Call it only in a child.
func ChildSay(format string, args ...any) {
	fmt.Fprintf(os.Stdout, childLinePrefix+format+"\n", args...)
}

// ChildListen returns a scanner of the lines the parent sends. Call it only
// in a child, once.
func ChildListen() *bufio.Scanner { return bufio.NewScanner(os.Stdin) }
