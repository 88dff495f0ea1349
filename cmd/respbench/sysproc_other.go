//go:build !linux

package main

import "syscall"

// serverProcAttr adds nothing outside Linux: a Ctrl-C in the terminal then reaches the
// server too, which stops it as respbench would.
func serverProcAttr() *syscall.SysProcAttr { return nil }
