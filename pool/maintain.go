package pool

import (
	"context"
	"time"
)

// maintain is the pool's one background goroutine: every interval, and whenever a
// checkout leaves fewer than MinIdle idle connections, it closes expired idle
// connections and dials up to MinIdle. It exits when ctx, which Close cancels, ends.
func (p *Pool[C]) maintain(ctx context.Context, interval time.Duration) {
	defer close(p.maintainDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	var reaped []C // reused between rounds
	for {
		reaped = p.reap(reaped[:0])
		p.fill(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.wake: // nil, and never ready, unless MinIdle is set
		}
	}
}

// reap closes idle connections past MaxIdleTime or MaxLifetime. buf is scratch space
// for the connections to close, returned for reuse.
func (p *Pool[C]) reap(buf []C) []C {
	if p.opts.MaxIdleTime == 0 && p.opts.MaxLifetime == 0 {
		return buf
	}
	p.mu.Lock()
	now := time.Now()
	kept := p.idle[:0]
	for _, ic := range p.idle {
		if p.expired(ic.created, ic.since, now) {
			buf = append(buf, ic.c)
			continue
		}
		kept = append(kept, ic)
	}
	clear(p.idle[len(kept):]) // drop references to the reaped connections
	p.idle = kept
	for _, c := range buf {
		// While any connection is idle no Get waits, so these slots simply free up.
		delete(p.conns, c)
		p.stats.closed++
		p.releaseSlotLocked()
	}
	p.mu.Unlock()
	for _, c := range buf {
		c.Close()
	}
	clear(buf)
	return buf
}

// fill dials until MinIdle connections are idle or the pool is full. It stops at the
// first dial error and tries again next round, so a down server costs one dial per
// round, not a busy loop.
func (p *Pool[C]) fill(ctx context.Context) {
	for {
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.opts.MinIdle || p.slots >= p.opts.Size {
			p.mu.Unlock()
			return
		}
		p.slots++
		p.stats.dials++
		p.mu.Unlock()

		c, err := p.opts.Dial(ctx)

		p.mu.Lock()
		if err != nil {
			p.stats.dialErrors++
			p.releaseSlotLocked()
			p.mu.Unlock()
			return
		}
		if p.closed {
			p.stats.closed++
			p.releaseSlotLocked()
			p.mu.Unlock()
			c.Close()
			return
		}
		now := time.Now()
		p.conns[c] = connState{created: now}
		p.returnLocked(c, now) // to a waiting Get, if one arrived while dialling
		p.mu.Unlock()
	}
}
