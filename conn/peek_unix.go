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
	var p idlePeek
	p.fn = p.peek
	return p.on(rc, underTLS)
}

// idlePeek is the callback of peekIdle's look at a socket. A plain TCP connection
// binds one once, for its raw socket (Conn.raw): a closure and a raw connection made
// per peek would cost every command after an idle spell three allocations.
type idlePeek struct {
	buf [1]byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func (p *idlePeek) peek(fd uintptr) bool {
	p.n, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return true // never wait: a quiet socket is the good case
}

// on is peekIdle on the socket of rc, which is under TLS when underTLS is set.
func (p *idlePeek) on(rc syscall.RawConn, underTLS bool) error {
	err := rc.Read(p.fn)
	n, rerr := p.n, p.err
	p.err = nil
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
