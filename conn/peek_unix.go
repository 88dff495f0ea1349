//go:build unix

package conn

import (
	"crypto/tls"
	"io"
	"net"
	"syscall"
)

// peekIdle looks at an idle socket without blocking or consuming anything: it returns
// io.EOF when the server has closed it (idle timeout, restart, CLIENT KILL), an error
// wrapping errUnsolicited when plain TCP has bytes nobody asked for, and nil when all
// is quiet or the transport cannot be peeked. TLS records that arrive unasked (session
// tickets) are normal, so under TLS only a close counts.
func peekIdle(nc net.Conn) error {
	underTLS := false
	if tc, ok := nc.(*tls.Conn); ok {
		nc, underTLS = tc.NetConn(), true
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var buf [1]byte
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait: a quiet socket is the good case
	})
	switch {
	case err != nil:
		return err
	case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK || rerr == syscall.EINTR:
		return nil
	case rerr != nil:
		return rerr
	case n == 0:
		return io.EOF
	case underTLS:
		return nil
	}
	return errUnsolicited
}
