package route

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/pool"
)

// standalone routes everything to one server.
type standalone struct {
	opts conn.Options
	e    *endpoint
}

// NewStandalone returns the router of the one server at addr. It dials nothing yet.
func NewStandalone(addr string, o Options) (*Router, error) {
	copts := o.Conn
	dial := func(ctx context.Context) (*conn.Conn, error) { return conn.Dial(ctx, addr, copts) }
	e, err := newEndpoint(&o, addr, dial, nil)
	if err != nil {
		return nil, err
	}
	s := &standalone{opts: copts, e: e}
	return &Router{d: &one{backend: s, given: true}}, nil
}

func (s *standalone) shared(ctx context.Context, _ Target) (*conn.Conn, error) {
	return s.e.shared.Get(ctx)
}

func (s *standalone) peer(context.Context, Target) (*SharedConn, error) { return s.e.shared, nil }

func (s *standalone) dedicated(ctx context.Context, _ Target) (*conn.Conn, error) {
	return s.e.get(ctx)
}

func (s *standalone) release(c *conn.Conn, reusable bool) { s.e.release(c, reusable) }

func (s *standalone) dial(ctx context.Context, _ Target, adjust func(*conn.Options)) (*conn.Conn, error) {
	opts := s.opts
	if adjust != nil {
		adjust(&opts)
	}
	return conn.Dial(ctx, s.e.addr, opts)
}

func (s *standalone) masterTargets(context.Context) ([]Target, error) { return oneServer(), nil }

func (s *standalone) addr(Target) string { return s.e.addr }

func (s *standalone) observe(context.Context, error) {}

func (s *standalone) stats() pool.Stats { return s.e.pool.Stats() }

func (s *standalone) close() error { return s.e.close() }
