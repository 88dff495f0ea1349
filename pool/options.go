package pool

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Options configures a Pool. Dial and Size are required; every other field's zero value
// turns its feature off.
type Options[C Conn] struct {
	// Dial opens a new connection. It is called with the context of the Get that needs
	// the connection, or with a context Close cancels for background dials. Required.
	Dial func(ctx context.Context) (C, error)

	// Size is the most connections open at once, counting those checked out, idle and
	// being dialled. Required, at least 1.
	Size int

	// MinIdle is how many idle connections a background goroutine keeps open, so a
	// burst of Gets does not wait for dials. Zero keeps none. At most Size; dials for it
	// never push the pool past Size.
	MinIdle int

	// MaxLifetime closes a connection at checkout or return once it is this old,
	// whether or not it is healthy (the background goroutine, if running, also closes
	// such idle connections); useful behind proxies and load balancers that rebalance
	// by connection. Zero means no limit.
	MaxLifetime time.Duration

	// MaxIdleTime closes a connection that has sat idle this long. Set it below the
	// server's `timeout` setting so the pool never hands out a connection the server has
	// already dropped. Setting it starts the background goroutine, which reaps idle
	// connections even from below MinIdle (and then dials fresh ones). Zero means no
	// limit.
	MaxIdleTime time.Duration

	// HealthCheckAfter makes Get ping an idle connection that has been idle at least
	// this long before handing it out; if the ping fails the connection is closed and
	// Get tries another idle connection or dials. The ping runs with Get's context, so
	// it adds a round trip to that checkout only. Zero (the default) never pings: a
	// connection's Err is still checked at every checkout, which catches connections
	// whose reader has already seen the socket fail.
	HealthCheckAfter time.Duration

	// OnWait, when set, is called after every Get that found the pool exhausted and
	// had to wait, with how long it waited (until it was handed a connection, or a slot
	// to dial into: the dial is not counted) and why it gave up (nil when it got a
	// connection or a slot). It is not called for a Get that did not wait. It runs on
	// the Get's goroutine and must not block.
	OnWait func(wait time.Duration, err error)
}

// validate reports every problem with o in one error matching ErrInvalidOptions.
func (o *Options[C]) validate() error {
	var problems []string
	if o.Dial == nil {
		problems = append(problems, "Dial is nil")
	}
	if o.Size < 1 {
		problems = append(problems, fmt.Sprintf("Size is %d, must be at least 1", o.Size))
	}
	if o.MinIdle < 0 {
		problems = append(problems, fmt.Sprintf("MinIdle is %d, must not be negative", o.MinIdle))
	} else if o.Size >= 1 && o.MinIdle > o.Size {
		problems = append(problems, fmt.Sprintf("MinIdle (%d) exceeds Size (%d)", o.MinIdle, o.Size))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"MaxLifetime", o.MaxLifetime},
		{"MaxIdleTime", o.MaxIdleTime},
		{"HealthCheckAfter", o.HealthCheckAfter},
	} {
		if d.v < 0 {
			problems = append(problems, fmt.Sprintf("%s is %v, must not be negative", d.name, d.v))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
}

// maintainInterval is how often the background goroutine runs: often enough that no
// connection stays idle much past MaxIdleTime, and at least once a second so MinIdle
// recovers from dial errors promptly.
func (o *Options[C]) maintainInterval() time.Duration {
	d := time.Second
	if o.MaxIdleTime > 0 {
		d = min(d, o.MaxIdleTime/2)
	}
	return max(d, time.Millisecond)
}
