package emulator

import (
	"net"
	"sync"
	"sync/atomic"
)

// clientWriter writes to one client connection for the two goroutines that answer it:
// the backend reader (forwarded replies and push frames) and the session (replies the
// emulator makes itself). A mutex keeps frames whole and in order.
//
// While an emulated command runs, push frames are held back and written after its
// reply, as a real server sends the invalidations a command causes after its reply.
type clientWriter struct {
	nc     net.Conn
	closed atomic.Bool

	mu      sync.Mutex
	holding bool
	held    []byte
}

func newClientWriter(nc net.Conn) *clientWriter { return &clientWriter{nc: nc} }

// write writes one or more whole frames.
func (w *clientWriter) write(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(p)
}

func (w *clientWriter) writeLocked(p []byte) {
	if len(p) == 0 || w.closed.Load() {
		return
	}
	if _, err := w.nc.Write(p); err != nil {
		w.close()
	}
}

// push writes a push frame, or holds it while an emulated command runs.
func (w *clientWriter) push(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holding {
		w.held = append(w.held, p...)
		return
	}
	w.writeLocked(p)
}

// hold starts holding push frames back.
func (w *clientWriter) hold() {
	w.mu.Lock()
	w.holding = true
	w.mu.Unlock()
}

// release writes reply (if any), then the push frames held back, and stops holding.
func (w *clientWriter) release(reply []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(reply)
	w.writeLocked(w.held)
	w.held, w.holding = nil, false
}

// close closes the connection. It does not take the mutex, so it also unblocks a write
// to a client that has stopped reading.
func (w *clientWriter) close() {
	if w.closed.CompareAndSwap(false, true) {
		w.nc.Close()
	}
}
