//go:build unix && !linux

package conn

import "syscall"

// writeNow writes buf to the socket fd without blocking (the socket is non-blocking).
func writeNow(fd uintptr, buf []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), buf)
	return n, errnoOf(err)
}

// peekNow looks at the next byte of the socket fd without consuming or waiting for it.
func peekNow(fd uintptr, b *[1]byte) syscall.Errno {
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return errnoOf(err)
}

// readNow reads from the socket fd what it has, without waiting for more (the socket is
// non-blocking).
func readNow(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	if err != nil {
		return 0, errnoOf(err)
	}
	return n, 0
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errno, ok := err.(syscall.Errno); ok {
		return errno
	}
	return syscall.EIO
}
