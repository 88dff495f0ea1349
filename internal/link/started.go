package link

import (
	"context"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Started is one command Start handed to its connection, its reply still to come:
// Finish collects it. It is a few words, which a lock handle keeps in itself, so
// that starting a command on each of several servers costs no allocation.
type Started struct {
	p  conn.Pending
	cn *conn.Conn

	// done says that Start ran the command whole (see Start): v and err are its
	// result, and p is unused.
	done bool
	v    resp.Value
	err  error

	// With an observer: the context its CommandStart returned and what CommandEnd
	// repeats of it.
	obs   observe.Observer
	octx  context.Context
	start observe.CommandStart
}

// Start is the first half of Do: it sends one command on cn, a connection Conn
// returned for lane, with the options o, and returns without waiting for the reply
// (conn.Conn.StartWith), so that a caller with a command for each of several servers
// (a Redlock) sends them all from its own goroutine before it waits for any. The
// client's observer sees the command start now and end in Finish.
//
// A client that may redirect (Cluster) runs the command whole here, as Do does,
// since following a redirection means waiting for the reply: Finish then returns
// its result. A command that cannot be sent fails in Finish too.
func (l *Client) Start(ctx context.Context, s *Started, cn *conn.Conn, lane route.Lane, o conn.CallOptions, args ...any) {
	*s = Started{cn: cn}
	if !l.Standalone {
		s.done = true
		s.v, s.cn, s.err = l.Do(ctx, cn, lane, o, args...)
		return
	}
	if obs := l.Observer; obs != nil {
		l.startObserved(ctx, s, obs, cn, o, args)
		return
	}
	if s.p, s.err = cn.StartWith(ctx, o, args...); s.err != nil {
		s.done = true
	}
}

// startObserved is Start after the observer's CommandStart.
func (l *Client) startObserved(ctx context.Context, s *Started, obs observe.Observer, cn *conn.Conn, o conn.CallOptions, args []any) {
	s.obs = obs
	s.start = observe.CommandStart{Addr: cn.Addr(), Start: time.Now()}
	if len(args) > 0 {
		name, _ := args[0].(string)
		s.start.Name = l.Name(l.entry(args), name)
	}
	s.octx = obs.CommandStart(ctx, s.start)
	if s.p, s.err = cn.StartWith(s.octx, o, args...); s.err != nil {
		s.done = true
	}
}

// Finish is the second half of Do: it waits for the reply of the command Start
// started and returns it with the connection that produced it. It may be called once.
func (l *Client) Finish(s *Started) (resp.Value, *conn.Conn, error) {
	if !s.done {
		s.v, s.err = s.p.Reply()
	}
	if s.obs != nil {
		e := observe.CommandEnd{
			Name:     s.start.Name,
			Start:    s.start.Start,
			Duration: time.Since(s.start.Start),
			Outcome:  l.Outcome(s.err),
			Err:      s.err,
		}
		if e.Outcome != observe.NotSent {
			e.Addr = s.cn.Addr()
		}
		s.obs.CommandEnd(s.octx, e)
	}
	v, cn, err := s.v, s.cn, s.err
	*s = Started{}
	return v, cn, err
}
