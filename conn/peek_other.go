//go:build !unix

package conn

import (
	"net"
	"syscall"
)

// peekIdle cannot look at sockets on this platform; a closed connection is found when
// the next command fails.
func peekIdle(net.Conn) error { return nil }

// idlePeek is peekIdle's callback, bound once per connection on platforms that can
// peek.
type idlePeek struct{ fn func(fd uintptr) bool }

func (p *idlePeek) peek(uintptr) bool { return true }

// on is peekIdle, which looks at nothing here.
func (p *idlePeek) on(syscall.RawConn, bool) error { return nil }
