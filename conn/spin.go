package conn

import (
	"runtime"
	"time"
)

// A caller that reads its own reply (a sequential caller, on a quiet connection) waits
// for the server, typically tens of microseconds on a local network. Parking in the
// runtime's network poller and being woken from it costs a good part of that again:
// the goroutine is parked, the thread looks for other work, the poller reports the
// socket, the goroutine is scheduled back. So such a reader first polls the socket
// itself, without blocking and yielding between polls, for up to spinBudget, and parks
// only if the reply has not come by then.
//
// Polling is worth it only when replies come within the budget. The connection keeps
// an average of how long its self-read replies took, and stops polling while that
// average is above twice the budget: a server across a slower network costs no
// spinning. Not above the budget itself: a parked wait counts the poller's wake-up too,
// tens of microseconds on a VM, so a few slow replies (a pause of the server's, a
// collection of the client's) left a loopback connection, whose replies come well
// within the budget, parking on every wait with an average the parked waits kept above
// the budget. That mode cost a sequential caller a fifth of its rate. A poll that runs
// out of budget right after another did counts as a wait of spinMissPenalty budgets at
// least: a server whose replies take a little over the budget (a same-rack network,
// 50-100 µs) would otherwise keep a caller polling its whole budget in vain on every
// wait, its parked waits averaging under twice the budget. Not the first poll in vain:
// on loopback one wait in a hundred or so outlasts the budget (the server or the
// client descheduled), and charging each of those eight budgets stopped the polling
// often enough to cost a sequential caller a quarter of its rate.
// Polling never delays anyone else: each poll yields to any goroutine that can run.

// spinBudget is the longest a reader polls before it parks.
const spinBudget = 50 * time.Microsecond

// spinStopFactor is how many budgets the average wait may reach before polling stops.
const spinStopFactor = 2

// spinMissPenalty is the least a wait whose polls ran out of budget, after a wait
// whose polls did too, counts for, in budgets: with two such waits the average passes
// spinStopFactor budgets, and the parked waits after them take about a dozen waits to
// bring it back.
const spinMissPenalty = 8

// spinMaxReplies is the most replies a call may wait for and still poll. A larger
// batch keeps the server busy for about as long as the budget, so its caller would
// spend the whole budget polling and park anyway: a pipeline of 100 spent a tenth of
// its client CPU so. Its waits are not counted in the average either, which is about
// round trips.
const spinMaxReplies = 16

// spins says whether the caller of cl polls for its replies.
func spins(cl *call) bool { return cl.want <= spinMaxReplies }

// spinWait is the state of a connection's polling, used only by the holder of the read
// role. Its callback is bound once per connection: a closure per poll would allocate.
type spinWait struct {
	budget time.Duration // spinBudget; tests change it
	avg    int64         // nanoseconds: moving average of the waits for a reply
	polls  int64         // polls made, for tests
	buf    [1]byte
	ready  bool // the last poll found bytes, the end of the stream, or an error
	missed bool // the last wait polled its whole budget in vain
	found  bool // the last wait's polls found bytes
	misses int  // polled waits that ran out of budget since a wait within the budget
	fn     func(fd uintptr) bool
}

// awaitBytes returns once the socket has bytes to read, or the wait should go to the
// poller: after spinBudget, when replies are slow, on any error (which the read that
// follows reports), or on a transport that cannot be polled (TLS). It returns the time
// it started, for spinDone. Without spin it returns at once.
func (c *Conn) awaitBytes(spin bool) int64 {
	start := nanotime()
	s := &c.r.spin
	s.missed, s.found = false, false
	if !spin || c.raw == nil || !s.polling() {
		return start
	}
	for {
		s.polls++
		if err := c.raw.Read(s.fn); err != nil || s.ready {
			s.found = true
			return start
		}
		if nanotime()-start > int64(s.budget) {
			s.missed = true
			return start
		}
		runtime.Gosched()
	}
}

// spinDone records how long the wait that began at start took, once bytes came, for
// a wait that could spin.
func (c *Conn) spinDone(start int64, spin bool) {
	if spin {
		c.r.spin.record(nanotime() - start)
	}
}

// polling says whether the next wait polls: the average wait is within
// spinStopFactor budgets.
func (s *spinWait) polling() bool { return s.avg <= spinStopFactor*int64(s.budget) }

// record counts a wait of wait nanoseconds, which awaitBytes left as found, missed or
// neither (parked without polling), in the average and the count of misses.
func (s *spinWait) record(wait int64) {
	switch {
	case s.found:
		s.misses = 0
	case !s.missed:
		// Parked without polling: a reply within the budget says polling would have
		// found it. Kept otherwise, the count would charge the next slow reply eight
		// budgets after fast replies in between, which kept those parked for good.
		if wait <= int64(s.budget) {
			s.misses = 0
		}
	case s.misses > 0:
		wait = max(wait, spinMissPenalty*int64(s.budget))
		fallthrough
	default:
		s.misses++
	}
	s.avg += (wait - s.avg) / 8
}
