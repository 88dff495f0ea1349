package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// link is one proxied connection: the client's socket, the server's, and a
// pump per direction.
type link struct {
	p      *Proxy
	client net.Conn
	server net.Conn

	dead      chan struct{} // closed by abort
	abortOnce sync.Once
	pumpsLeft atomic.Int32
}

// chunk is bytes read from one side, stamped with when they were read so
// latency counts from arrival.
type chunk struct {
	at   time.Time
	data []byte
}

func (l *link) start() {
	l.pumpsLeft.Store(2)
	l.pump(ToServer, l.client, l.server)
	l.pump(ToClient, l.server, l.client)
}

// abort resets both sockets; it reports whether this call did it.
func (l *link) abort() bool {
	did := false
	l.abortOnce.Do(func() {
		did = true
		close(l.dead)
		abortConn(l.client)
		abortConn(l.server)
	})
	return did
}

// pumpDone closes the link once both directions have ended.
func (l *link) pumpDone() {
	if l.pumpsLeft.Add(-1) == 0 {
		l.client.Close()
		l.server.Close()
		l.p.forget(l)
	}
}

// pump starts the reader and writer of one direction. The channel between
// them is short so a slow or paused writer pushes back on the reader.
func (l *link) pump(dir Direction, src, dst net.Conn) {
	ch := make(chan chunk, 4)
	var readErr error
	l.p.wg.Go(func() {
		readErr = l.read(dir, src, ch)
		close(ch)
	})
	l.p.wg.Go(func() {
		l.write(dir, dst, ch)
		// The reader set readErr before closing ch, which write waited for.
		switch {
		case errors.Is(readErr, io.EOF):
			closeWrite(dst) // pass the sender's half-close on
		case readErr != nil:
			l.abort() // pass a reset on
		}
		l.pumpDone()
	})
}

// read copies src into ch until src fails, not reading while dir is paused.
func (l *link) read(dir Direction, src net.Conn, ch chan<- chunk) error {
	buf := make([]byte, 32<<10)
	for {
		f, changed := l.p.now(dir)
		if f.paused {
			if !l.sleep(0, changed) {
				return nil
			}
			continue
		}
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case ch <- chunk{at: time.Now(), data: append([]byte(nil), buf[:n]...)}:
			case <-l.dead:
				return nil
			}
		}
		if err != nil {
			return err
		}
	}
}

// write delivers each chunk from ch to dst under dir's faults as they are
// at the moment of delivery. It drains ch to the end so the reader never
// blocks on a writer that stopped.
func (l *link) write(dir Direction, dst net.Conn, ch <-chan chunk) {
	halfClosed := false
	for c := range ch {
		if !l.deliver(dir, dst, c, &halfClosed) {
			for range ch {
			}
			return
		}
	}
}

// deliver applies dir's faults to one chunk; it reports false when the link
// is dead and nothing more can be written.
func (l *link) deliver(dir Direction, dst net.Conn, c chunk, halfClosed *bool) bool {
	for {
		f, changed := l.p.now(dir)
		select {
		case <-l.dead:
			return false
		default:
		}
		switch {
		case f.paused:
			if !l.sleep(0, changed) {
				return false
			}
			continue
		case f.halfClose || *halfClosed:
			if !*halfClosed {
				*halfClosed = true
				closeWrite(dst)
				l.p.noteFault(0, 1)
			}
			l.p.count(dir, 0, len(c.data))
			return true
		case f.blackhole:
			l.p.count(dir, 0, len(c.data))
			return true
		}
		if wait := time.Until(c.at.Add(f.latency)); wait > 0 {
			if !l.sleep(wait, changed) {
				return false
			}
			continue
		}
		n, cut := l.p.take(dir, len(c.data))
		if f.bandwidth > 0 {
			// The chunk's share of a second at that rate, before it goes, so
			// that n bytes take at least n/rate; a limit lifted meanwhile
			// applies from the next chunk.
			if d := time.Duration(int64(n) * int64(time.Second) / int64(f.bandwidth)); d > 0 && !l.sleep(d, nil) {
				return false
			}
		}
		if n > 0 {
			if _, err := dst.Write(c.data[:n]); err != nil {
				l.abort()
				return false
			}
			l.p.count(dir, n, 0)
		}
		if cut {
			if l.abort() {
				l.p.noteFault(1, 0)
			}
			return false
		}
		return true
	}
}

// sleep waits for d (until a change when d is 0), a change of faults, or the
// link's death; it reports false on death.
func (l *link) sleep(d time.Duration, changed <-chan struct{}) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-changed:
	case <-l.dead:
		return false
	}
	return true
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
