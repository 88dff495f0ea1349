package link

import (
	"context"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
)

// LockHalves are a managed lock's acquisition and release, each split in a half that
// sends its command and a half that collects the reply (Start, Finish), so that
// package coordination's Redlock sends its command to every server from its own
// goroutine before it waits for any. L is package lock's Lock and O its
// ReleaseOutcome: package lock registers its halves ([RegisterLockHalves]) when it is
// initialised, and coordination finds them with [LockHalvesOf]; neither adds to
// package lock's public API. The halves of one handle are used one pair at a time, a finish after each start
// that reported true.
type LockHalves[L, O any] struct {
	// StartTake sends SET key token NX PX ttl for the handle, adopted for the
	// acquisition, waiting for its reply until by at the latest (zero: no bound),
	// with c for its state. It reports false, having done nothing, when it would have
	// to wait before it sends (a dial): the caller then runs lock.Locker.TryTakeBy
	// instead.
	StartTake func(m *L, ctx context.Context, c *LockCall, by time.Time) bool
	// FinishTake collects it: whether the key was taken, or why not (the error says
	// whether the SET was written, as lock.Locker.TryTakeBy's does).
	FinishTake func(m *L, c *LockCall) (bool, error)
	// StartRelease is the first half of lock.Lock.ReleaseBy(ctx, by): it sends the
	// compare-and-delete. It reports false, having done nothing, when it would have
	// to wait before it sends: the caller then runs ReleaseBy instead.
	StartRelease func(m *L, ctx context.Context, c *LockCall, by time.Time) bool
	// FinishRelease is the second half: what ReleaseBy returns.
	FinishRelease func(m *L, c *LockCall) (O, error)
}

// LockCall is a half of a lock handle's acquisition or release in flight: its caller
// keeps it (in a structure of its own, without an allocation) from the start to the
// finish, which clears it. Only package lock reads or writes its fields.
type LockCall struct {
	Ctx  context.Context
	By   time.Time
	Conn *conn.Conn // the connection it went on, after any redirection
	Lane route.Lane
	Cmd  Started
	Step uint8 // which command of the release's chain was sent
}

// lockHalves is the *LockHalves[L, O] package lock registered.
var lockHalves any

// RegisterLockHalves records package lock's halves. Package lock calls it once, when
// it is initialised.
func RegisterLockHalves[L, O any](h *LockHalves[L, O]) { lockHalves = h }

// LockHalvesOf returns the halves package lock registered.
func LockHalvesOf[L, O any]() *LockHalves[L, O] { return lockHalves.(*LockHalves[L, O]) }
