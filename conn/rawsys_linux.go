//go:build linux

package conn

import (
	"syscall"
	"unsafe"
)

// The socket calls of the inline write and of the self-read polling never block: the
// socket is non-blocking and the peek says MSG_DONTWAIT. So they are made as raw
// system calls, without telling the scheduler a call may block. Telling it
// (entersyscall) costs more than these calls often do, and wakes the runtime's
// monitor thread whenever it sleeps, which a single goroutine waiting on a pipeline
// makes it do between batches.

// writeNow writes buf to the socket fd without blocking.
func writeNow(fd uintptr, buf []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)))
	if errno != 0 {
		return -1, errno
	}
	return int(n), 0
}

// peekNow looks at the next byte of the socket fd without consuming or waiting for it.
func peekNow(fd uintptr, b *[1]byte) syscall.Errno {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(b)), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno
}

// readNow reads from the socket fd what it has, without waiting for more.
func readNow(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}
