package route

import (
	"fmt"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
)

// Options are what every router needs from the client's options.
type Options struct {
	Conn conn.Options // how every connection to a server is opened

	PoolSize        int
	MinIdle         int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration

	// ReplicaReads lets replicas serve read-only commands.
	ReplicaReads bool

	// OnSlotMoved, when set, is called whenever a Cluster slot that had a server gets
	// another one while connections to the old one stay open (a slot migration, which
	// leaves a client-side cache with keys the new owner does not track). It is the
	// owner's one subscription to the router's topology, made with the router; it runs
	// on the goroutine that saw the change and must not block.
	OnSlotMoved func()
}

// DedicatedHealthCheckAfter is how long a dedicated connection may idle before its
// checkout sends a PING: one that long idle may have been dropped by a server timeout
// or a middlebox, and one PING is cheaper than a failed blocking command.
const DedicatedHealthCheckAfter = 30 * time.Second

// newPool is the pool of dedicated connections to the server at addr, dialled by
// dial. A checkout that waits is reported to the connections' observer.
func (o *Options) newPool(addr string, dial dialFunc) (*pool.Pool[*conn.Conn], error) {
	po := pool.Options[*conn.Conn]{
		Dial:             dial,
		Size:             o.PoolSize,
		MinIdle:          o.MinIdle,
		MaxLifetime:      o.ConnMaxLifetime,
		MaxIdleTime:      o.ConnMaxIdleTime,
		HealthCheckAfter: DedicatedHealthCheckAfter,
	}
	if obs := o.Conn.Observer; obs != nil {
		po.OnWait = func(wait time.Duration, err error) {
			if err != nil {
				err = checkoutError(err)
			}
			obs.PoolWait(observe.PoolWait{Addr: addr, Wait: wait, Err: err})
		}
	}
	p, err := pool.New(po)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	return p, nil
}
