package pool

// Stats is a snapshot of a Pool's counters and gauges, taken by Pool.Stats.
//
// The counters (Hits to Closed) only grow. The gauges describe the moment of the
// snapshot: Total+Dialing never exceeds Options.Size, and Total = Idle+InUse.
type Stats struct {
	Hits       uint64 // checkouts served by an existing connection, idle or handed over by Put
	Misses     uint64 // checkouts that dialled, whether or not the dial succeeded
	Timeouts   uint64 // waits ended by the caller's context
	Dials      uint64 // dial attempts, by Get and by the background goroutine
	DialErrors uint64 // dial attempts that failed
	Closed     uint64 // connections the pool closed: broken, expired, failed a health check, discarded, or closed by Close

	Total   int // open connections, idle or checked out
	Idle    int // open connections waiting in the pool
	InUse   int // open connections checked out (including any being health-checked)
	Dialing int // dials in progress; each holds a slot
	Waiters int // Get calls waiting for a connection
}

// counters are the cumulative part of Stats, kept under Pool.mu.
type counters struct {
	hits, misses, timeouts, dials, dialErrors, closed uint64
}
