package testserver

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so it and its forked
// children (BGSAVE, AOF rewrite) can be signalled together, and kills it when
// the test binary dies, even by go test -timeout. (The kernel sends the
// parent-death signal when the thread that forked the server ends; the Go
// runtime ends threads only for goroutines that exit while locked to one.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// isStopped reads from /proc whether the process is stopped by a signal, so
// Pause and Resume can wait until the signal has taken effect.
func isStopped(pid int) (bool, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false, err
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses, the state
	// follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, stat)
	}
	state := stat[i+2]
	return state == 'T' || state == 't', nil
}
