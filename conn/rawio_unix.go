//go:build unix

package conn

import "syscall"

// rawIO says whether this platform does the non-blocking socket calls below, which the
// inline write (pipeline.go) and the self-read polling (spin.go) need.
const rawIO = true

func (w *nonBlockingWrite) write(fd uintptr) bool {
	for {
		w.n, w.err = syscall.Write(int(fd), w.buf)
		if w.err != syscall.EINTR {
			return true // done, whatever happened: never wait for writability
		}
	}
}

func (s *spinWait) poll(fd uintptr) bool {
	_, _, err := syscall.Recvfrom(int(fd), s.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	// Bytes, end of stream (0 bytes, no error) and errors are all for the read to see.
	s.ready = err != syscall.EAGAIN && err != syscall.EINTR
	return true // never wait here
}
