package route

import (
	"context"

	"github.com/respire/respire/conn"
)

// Dialing is a dial in progress that any number of callers wait for: the single
// flight by which a connection is dialled once, however many callers find it missing
// or broken at the same moment. Its owner makes it, keeps it where those callers find
// it while the dial runs (under the owner's lock), and Finishes it once.
type Dialing struct {
	done chan struct{}
	c    *conn.Conn
	err  error
}

// NewDialing returns a dial in progress, not finished.
func NewDialing() *Dialing { return &Dialing{done: make(chan struct{})} }

// Finish records the dial's outcome and wakes every caller waiting for it; it is
// called once.
func (d *Dialing) Finish(c *conn.Conn, err error) {
	d.c, d.err = c, err
	close(d.done)
}

// Wait returns the dial's outcome, or gives up when ctx ends first, without stopping
// the dial others may wait for; it then says that nothing was sent (conn.ErrNotSent).
func (d *Dialing) Wait(ctx context.Context) (*conn.Conn, error) {
	select {
	case <-d.done:
		return d.c, d.err
	case <-ctx.Done():
		return nil, &conn.CallError{Err: context.Cause(ctx)}
	}
}
