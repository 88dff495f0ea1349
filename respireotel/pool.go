package respireotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/respire/respire"
)

// connStateKey is the conventions' db.client.connection.state (idle or used).
const connStateKey = attribute.Key("db.client.connection.state")

// ObservePool reports c's dedicated-connection pool (c.PoolStats, summed over every
// node of a Cluster) at each metric collection, as db.client.connection.count (idle
// and used) and db.client.connection.pending_requests, named name in
// db.client.connection.pool.name. The server's "host:port" keeps the series beside
// the wait times, which are named by the address of the node whose pool waited.
// Ordinary commands do not take pooled connections: these count blocking commands,
// transactions and other dedicated uses. stop ends the reporting; call it before or
// after c.Close. A nil c or an empty name (the conventions require a pool's name) is
// an error matching ErrInvalidArg, and nothing is reported.
func (o *Observer) ObservePool(c *respire.Client, name string) (stop func() error, err error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: ObservePool of a nil client", ErrInvalidArg)
	case name == "":
		return nil, fmt.Errorf("%w: ObservePool with an empty pool name", ErrInvalidArg)
	}
	pool := attribute.NewSet(poolNameKey.String(name))
	idle := metric.WithAttributeSet(attribute.NewSet(poolNameKey.String(name), connStateKey.String("idle")))
	used := metric.WithAttributeSet(attribute.NewSet(poolNameKey.String(name), connStateKey.String("used")))
	pending := metric.WithAttributeSet(pool)
	reg, err := o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := c.PoolStats()
		obs.ObserveInt64(o.inst.poolCount, int64(s.Idle), idle)
		obs.ObserveInt64(o.inst.poolCount, int64(s.InUse), used)
		obs.ObserveInt64(o.inst.poolPending, int64(s.Waiters), pending)
		return nil
	}, o.inst.poolCount, o.inst.poolPending)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
