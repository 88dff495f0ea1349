//go:build !unix

package conn

// rawIO is false: connections here leave all socket I/O to the runtime (writer and
// reader goroutines, blocking reads), and never call the functions below.
const rawIO = false

func (w *nonBlockingWrite) write(uintptr) bool { return true }

func (s *spinWait) poll(uintptr) bool { s.ready = true; return true }

func (p *streamPosition) isReadable(uintptr) bool { return true }

func (r *recvNow) read(uintptr) {}
