package main

import "syscall"

// serverProcAttr puts the server in its own process group, so a Ctrl-C in the terminal
// reaches respbench alone and respbench stops the server in order, and has the kernel
// kill it if respbench dies without stopping it.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
