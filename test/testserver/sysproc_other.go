//go:build unix && !linux

package testserver

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so it and its forked
// children can be signalled together. Without Linux's parent-death signal a
// server may outlive a test binary that is killed outright.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// isStopped cannot be observed portably here; Pause and Resume return as soon
// as the signal is sent.
func isStopped(int) (bool, error) {
	return false, errors.ErrUnsupported
}
