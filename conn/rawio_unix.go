//go:build unix

package conn

import "syscall"

// rawIO says whether this platform does the non-blocking socket calls below, which the
// inline write (pipeline.go) and the self-read polling (spin.go) need.
const rawIO = true

func (w *nonBlockingWrite) write(fd uintptr) bool {
	for {
		w.n, w.err = writeNow(fd, w.buf)
		if w.err != syscall.EINTR {
			return true // done, whatever happened: never wait for writability
		}
	}
}

func (s *spinWait) poll(fd uintptr) bool {
	errno := peekNow(fd, &s.buf)
	// Bytes, end of stream (0 bytes, no error) and errors are all for the read to see.
	s.ready = errno != syscall.EAGAIN && errno != syscall.EINTR
	return true // never wait here
}

func (p *streamPosition) isReadable(fd uintptr) bool {
	if p.polled {
		return true // called again after the poller said bytes came
	}
	for {
		// Bytes, end of stream and errors all end the wait; the read that follows
		// reports them.
		switch peekNow(fd, &p.peekBuf) {
		case syscall.EINTR:
		case syscall.EAGAIN:
			p.polled = true
			return false
		default:
			return true
		}
	}
}

func (r *recvNow) read(fd uintptr) {
	for {
		r.n, r.errno = readNow(fd, r.p)
		if r.errno != syscall.EINTR {
			return
		}
	}
}
