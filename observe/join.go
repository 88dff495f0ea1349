package observe

import "context"

// Join returns an Observer that passes every event to each of obs in turn, skipping
// nil ones: to attach a tracer and a logger, say. It returns nil when none is left, so
// a client given only nils pays nothing, and the one itself when one is left. The
// context one observer's CommandStart or BatchStart returns is the next one's, so
// spans nest in the order the observers are listed. (It is not named Multi, which is
// the BatchKind of DoMulti.)
func Join(obs ...Observer) Observer {
	var list joined
	for _, o := range obs {
		switch o := o.(type) {
		case nil:
		case joined:
			list = append(list, o...)
		default:
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

// joined is the Observer Join returns for several.
type joined []Observer

func (m joined) CommandStart(ctx context.Context, e CommandStart) context.Context {
	for _, o := range m {
		ctx = o.CommandStart(ctx, e)
	}
	return ctx
}

func (m joined) CommandEnd(ctx context.Context, e CommandEnd) {
	for _, o := range m {
		o.CommandEnd(ctx, e)
	}
}

func (m joined) BatchStart(ctx context.Context, e BatchStart) context.Context {
	for _, o := range m {
		ctx = o.BatchStart(ctx, e)
	}
	return ctx
}

func (m joined) BatchEnd(ctx context.Context, e BatchEnd) {
	for _, o := range m {
		o.BatchEnd(ctx, e)
	}
}

func (m joined) Conn(e Conn) {
	for _, o := range m {
		o.Conn(e)
	}
}

func (m joined) PoolWait(e PoolWait) {
	for _, o := range m {
		o.PoolWait(e)
	}
}

func (m joined) Redirect(e Redirect) {
	for _, o := range m {
		o.Redirect(e)
	}
}

func (m joined) Topology(e Topology) {
	for _, o := range m {
		o.Topology(e)
	}
}

func (m joined) Failover(e Failover) {
	for _, o := range m {
		o.Failover(e)
	}
}

func (m joined) Cutoff(e Cutoff) {
	for _, o := range m {
		o.Cutoff(e)
	}
}

func (m joined) Cache(e Cache) {
	for _, o := range m {
		o.Cache(e)
	}
}

func (m joined) Lock(ctx context.Context, e Lock) {
	for _, o := range m {
		o.Lock(ctx, e)
	}
}
