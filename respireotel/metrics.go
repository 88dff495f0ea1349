package respireotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
)

// durationBuckets are the bucket boundaries, in seconds, the database conventions give
// db.client.operation.duration; the other duration histograms use them too.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// Label values shared by several instruments.
const (
	resultOK        = "ok"
	resultFailed    = "failed"
	resultAcquired  = "acquired"
	resultGaveUp    = "gave_up"
	resultChanged   = "changed"
	resultUnchanged = "unchanged"
)

// instruments are every instrument an Observer records into.
type instruments struct {
	opDuration   metric.Float64Histogram
	connWait     metric.Float64Histogram
	connTimeouts metric.Int64Counter
	connCreate   metric.Float64Histogram
	connEvents   metric.Int64Counter
	poolCount    metric.Int64ObservableUpDownCounter
	poolPending  metric.Int64ObservableUpDownCounter

	redirects metric.Int64Counter
	refreshes metric.Int64Counter
	failovers metric.Int64Counter

	cacheHits          metric.Int64Counter
	cacheMisses        metric.Int64Counter
	cacheInvalidations metric.Int64Counter
	cacheFlushes       metric.Int64Counter

	lockAttempts     metric.Int64Counter
	lockAcquisitions metric.Int64Counter
	lockContentions  metric.Int64Counter
	lockWait         metric.Float64Histogram
	lockRenewals     metric.Int64Counter
	lockLosses       metric.Int64Counter
	lockReleases     metric.Int64Counter
	lockCutoffs      metric.Int64Counter
}

// instrumentMaker creates instruments and keeps the first error, so newInstruments reads
// as the list of instruments it is.
type instrumentMaker struct {
	m   metric.Meter
	err error
}

func (mk *instrumentMaker) keep(err error) {
	if err != nil {
		mk.err = errors.Join(mk.err, err)
	}
}

func (mk *instrumentMaker) counter(name, unit, desc string) metric.Int64Counter {
	c, err := mk.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err)
	return c
}

func (mk *instrumentMaker) seconds(name, desc string) metric.Float64Histogram {
	h, err := mk.m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	mk.keep(err)
	return h
}

func (mk *instrumentMaker) gauge(name, unit, desc string) metric.Int64ObservableUpDownCounter {
	g, err := mk.m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err)
	return g
}

func newInstruments(m metric.Meter) (instruments, error) {
	mk := &instrumentMaker{m: m}
	in := instruments{
		opDuration:   mk.seconds("db.client.operation.duration", "Duration of database client operations."),
		connWait:     mk.seconds("db.client.connection.wait_time", "The time it took to obtain an open connection from the pool."),
		connTimeouts: mk.counter("db.client.connection.timeouts", "{timeout}", "The number of connection timeouts that have occurred trying to obtain a connection from the pool."),
		connCreate:   mk.seconds("db.client.connection.create_time", "The time it took to create a new connection."),
		connEvents:   mk.counter("respire.connection.events", "{event}", "Connections dialled, failed to dial, lost or re-authenticated."),
		poolCount:    mk.gauge("db.client.connection.count", "{connection}", "The number of connections that are currently in state described by the state attribute."),
		poolPending:  mk.gauge("db.client.connection.pending_requests", "{request}", "The number of current pending requests for an open connection."),

		redirects: mk.counter("respire.redirects", "{redirect}", "MOVED, ASK, TRYAGAIN and CLUSTERDOWN replies the client followed."),
		refreshes: mk.counter("respire.cluster.refreshes", "{refresh}", "Refreshes of a Cluster's slot map."),
		failovers: mk.counter("respire.sentinel.failovers", "{failover}", "New masters named by Sentinel that the client followed."),

		cacheHits:          mk.counter("respire.cache.hits", "{hit}", "Cached reads answered from memory."),
		cacheMisses:        mk.counter("respire.cache.misses", "{miss}", "Cached reads that went to the server."),
		cacheInvalidations: mk.counter("respire.cache.invalidations", "{key}", "Keys whose cached entries a server invalidation dropped."),
		cacheFlushes:       mk.counter("respire.cache.flushes", "{flush}", "Times every cached entry was dropped."),

		lockAttempts:     mk.counter("respire.lock.attempts", "{attempt}", "Tries to take a lock."),
		lockAcquisitions: mk.counter("respire.lock.acquisitions", "{acquisition}", "Lock acquisitions, by whether they took the lock."),
		lockContentions:  mk.counter("respire.lock.contentions", "{attempt}", "Tries that found the lock held by another owner."),
		lockWait:         mk.seconds("respire.lock.wait_time", "How long lock acquisitions waited."),
		lockRenewals:     mk.counter("respire.lock.renewals", "{renewal}", "Lease renewals, by result."),
		lockLosses:       mk.counter("respire.lock.losses", "{loss}", "Leases known or presumed lost, by cause."),
		lockReleases:     mk.counter("respire.lock.releases", "{release}", "Lock releases, by outcome."),
		lockCutoffs:      mk.counter("respire.lock.cutoffs", "{cutoff}", "CLIENT KILLs locks sent to cut off a connection."),
	}
	return in, mk.err
}

// recordOperation records one command or batch in db.client.operation.duration and
// returns its cached attributes.
func (o *Observer) recordOperation(ctx context.Context, name, addr string, d time.Duration, f failure) *opAttrs {
	a := o.ops.get(opKey{name, addr})
	if f.errType == "" {
		o.inst.opDuration.Record(ctx, d.Seconds(), a.record...)
		return a
	}
	kv := append(o.opBase(name, len(a.server)+2), a.server...)
	kv = append(kv, f.attrs()...)
	o.inst.opDuration.Record(ctx, d.Seconds(), metric.WithAttributes(kv...))
	return a
}

// with makes attributes a measurement option, for the instruments that take a label
// or two and no cached set.
func with(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributes(kv...)
}

// Conn records connection events and dial times.
func (o *Observer) Conn(e observe.Conn) {
	ctx := context.Background()
	kv := append(serverAttrs(e.Addr), connEventKey.String(e.Kind.String()))
	o.inst.connEvents.Add(ctx, 1, with(kv...))
	if e.Kind == observe.ConnDialed {
		o.inst.connCreate.Record(ctx, e.Duration.Seconds(), with(poolNameKey.String(e.Addr)))
	}
}

// PoolWait records a checkout that waited, and counts it in
// db.client.connection.timeouts if it gave up on a timeout.
func (o *Observer) PoolWait(e observe.PoolWait) {
	ctx := context.Background()
	name := with(poolNameKey.String(e.Addr))
	o.inst.connWait.Record(ctx, e.Wait.Seconds(), name)
	if isTimeout(e.Err) {
		o.inst.connTimeouts.Add(ctx, 1, name)
	}
}

// isTimeout reports whether a checkout's error is a timeout: its deadline passed, or
// the pool stayed exhausted for some other reason than a cancellation. A cancelled
// context or a closed pool is the caller giving up, not a timeout.
func isTimeout(err error) bool {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, context.Canceled):
		return false
	}
	return errors.Is(err, pool.ErrExhausted)
}

// Redirect counts a redirection by kind.
func (o *Observer) Redirect(e observe.Redirect) {
	o.inst.redirects.Add(context.Background(), 1, with(redirectKindKey.String(e.Kind.String())))
}

// Topology counts a slot-map refresh by result.
func (o *Observer) Topology(e observe.Topology) {
	result := resultUnchanged
	switch {
	case e.Err != nil:
		result = resultFailed
	case e.Changed:
		result = resultChanged
	}
	o.inst.refreshes.Add(context.Background(), 1, with(resultKey.String(result)))
}

// Failover counts the client following Sentinel to a new master.
func (o *Observer) Failover(e observe.Failover) {
	o.inst.failovers.Add(context.Background(), 1, with(masterKey.String(e.Master)))
}

// Cutoff counts a lock's CLIENT KILL by result.
func (o *Observer) Cutoff(e observe.Cutoff) {
	o.inst.lockCutoffs.Add(context.Background(), 1, with(resultKey.String(okOrFailed(e.Err))))
}

func okOrFailed(err error) string {
	if err != nil {
		return resultFailed
	}
	return resultOK
}

// Cache counts client-side cache events.
func (o *Observer) Cache(e observe.Cache) {
	ctx := context.Background()
	switch e.Kind {
	case observe.CacheHit:
		o.inst.cacheHits.Add(ctx, 1)
	case observe.CacheMiss:
		o.inst.cacheMisses.Add(ctx, 1)
	case observe.CacheInvalidate:
		o.inst.cacheInvalidations.Add(ctx, int64(e.Keys))
	case observe.CacheFlush, observe.CacheTrackingLost:
		o.inst.cacheFlushes.Add(ctx, 1, with(flushReasonKey.String(e.Kind.String())))
	}
}

// recordLock records one step of a lock's life.
func (o *Observer) recordLock(ctx context.Context, e observe.Lock) {
	in := &o.inst
	switch e.Kind {
	case observe.LockAttempt:
		in.lockAttempts.Add(ctx, 1)
	case observe.LockContended:
		in.lockContentions.Add(ctx, 1)
	case observe.LockAcquired, observe.LockGaveUp:
		result := resultAcquired
		if e.Kind == observe.LockGaveUp {
			result = resultGaveUp
		}
		opt := with(resultKey.String(result))
		in.lockAcquisitions.Add(ctx, 1, opt)
		in.lockWait.Record(ctx, e.Wait.Seconds(), opt)
	case observe.LockRenewed:
		in.lockRenewals.Add(ctx, 1, with(resultKey.String(okOrFailed(e.Err))))
	case observe.LockLost:
		in.lockLosses.Add(ctx, 1, with(lossCauseKey.String(lossCause(e.Err))))
	case observe.LockReleased:
		in.lockReleases.Add(ctx, 1, with(releaseKey.String(e.Release.String())))
	}
}
