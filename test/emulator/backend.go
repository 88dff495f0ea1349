package emulator

import (
	"net"
	"sync"

	"github.com/respire/respire/resp"
)

// backend is the backend connection of one client connection. The session writes
// commands; one goroutine (run) reads every frame and routes it: push frames straight
// to the client, replies by the queue of pending commands, in order.
type backend struct {
	nc net.Conn
	fr *frameReader

	mu    sync.Mutex
	queue []*pending

	dead chan struct{} // closed when run returns: the connection is gone
}

// pending is a command sent on the backend connection whose reply has not been read.
type pending struct {
	// internal marks a command of the emulator's own (a liveness check): its reply
	// is not forwarded.
	internal bool
	// holdAfter starts holding the client's push frames once the reply is read.
	holdAfter bool
	// dropClient closes the client connection instead of forwarding the reply
	// (DropConn AfterForward).
	dropClient bool
	// rewrite, if set, gives the bytes to forward instead of the reply's own.
	rewrite func(v resp.Value, raw []byte) []byte
	// done receives the reply once it has been handled.
	done chan resp.Value
}

func newPending() *pending { return &pending{done: make(chan resp.Value, 1)} }

func dialBackend(addr string) (*backend, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &backend{nc: nc, fr: newFrameReader(nc), dead: make(chan struct{})}, nil
}

// send queues p and writes cmd; p == nil sends a command whose replies are not
// matched to it (subscribe confirmations), which are forwarded as they come.
func (b *backend) send(p *pending, cmd []byte) error {
	if p != nil {
		b.mu.Lock()
		b.queue = append(b.queue, p)
		b.mu.Unlock()
	}
	if _, err := b.nc.Write(cmd); err != nil {
		b.close()
		return err
	}
	return nil
}

func (b *backend) pop() *pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		return nil
	}
	p := b.queue[0]
	b.queue[0] = nil
	b.queue = b.queue[1:]
	return p
}

// run reads the backend until the connection ends, then closes the client connection
// too: a client whose backend connection was killed (CLIENT KILL, server death) is
// disconnected, and whatever it still waited for is never answered.
func (b *backend) run(cw *clientWriter) {
	defer close(b.dead)
	defer cw.close()
	for {
		v, raw, err := b.fr.next()
		if err != nil {
			return
		}
		if v.Kind() == resp.KindPush {
			cw.push(raw)
			continue
		}
		p := b.pop()
		switch {
		case p == nil:
			cw.write(raw) // RESP2 pub/sub messages, MONITOR output, extra confirmations
		case p.internal:
			if p.holdAfter {
				cw.hold()
			}
		case p.dropClient:
			cw.close()
		case p.rewrite != nil:
			cw.write(p.rewrite(v, raw))
		default:
			cw.write(raw)
		}
		if p != nil {
			p.done <- v
		}
	}
}

// close closes the connection, which ends run.
func (b *backend) close() { b.nc.Close() }
