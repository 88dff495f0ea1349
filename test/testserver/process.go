package testserver

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is one run of redis-server (or of a Child), from exec to reaping.
type process struct {
	cmd     *exec.Cmd
	logPath string
	logFrom int64         // size of the log when this run began
	done    chan struct{} // closed once the process has exited and been reaped
	err     error         // result of Wait; read only after done is closed
}

// launch starts the binary with its standard output and error appended to
// the log file, and a goroutine that reaps it.
func launch(bin string, args []string, dir, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child holds its own copy
	info, err := log.Stat()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return launchCmd(cmd, log, logPath, info.Size())
}

// launchCmd starts cmd in its own process group with its output appended to
// log, and a goroutine that reaps it.
func launchCmd(cmd *exec.Cmd, log *os.File, logPath string, logFrom int64) (*process, error) {
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, logPath: logPath, logFrom: logFrom, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited and been reaped.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalGroup sends sig to the server and its forked children. A group whose
// leader is already reaped is left alone: its id may belong to someone else.
func (p *process) signalGroup(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	err := syscall.Kill(-p.pid(), sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// wait waits up to timeout for the process to exit.
func (p *process) wait(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// waitState polls until the process is (or is no longer) stopped by a
// signal, or the deadline passes.
func (p *process) waitState(stopped bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := isStopped(p.pid())
		if errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		if err != nil {
			return err
		}
		if got == stopped {
			return nil
		}
		if time.Now().After(deadline) {
			want := "stopped"
			if !stopped {
				want = "running"
			}
			return fmt.Errorf("process %d not %s after %v", p.pid(), want, timeout)
		}
		if p.wait(pollInterval) {
			return fmt.Errorf("process %d exited: %v", p.pid(), p.err)
		}
	}
}

// runLog returns what this run wrote to the log.
func (p *process) runLog() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(p.logFrom, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// exitError describes a process that exited when it should be serving.
func (p *process) exitError() error {
	log := p.runLog()
	err := fmt.Errorf("redis-server exited: %v", p.err)
	if strings.Contains(log, "Address already in use") {
		err = fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
