package coordination

import (
	"fmt"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
)

// Coordinator makes fenced locks on one client. It is cheap: create one per client
// and share it.
type Coordinator struct {
	c     *respire.Client
	ln    *link.Client // what the leases use of c: its prefix, observer and key watches
	locks *lock.Locker // renews, verifies and releases the leases, cutting off as lock does
	obs   observe.Observer
}

// New returns the Coordinator for c. Keys get c's key prefix, like every other key.
// Its leases report the steps of their lives (observe.Lock) to c's Observer, if it has
// one.
func New(c *respire.Client) *Coordinator {
	co := &Coordinator{c: c, ln: link.Of(c), locks: lock.New(c)}
	if co.ln != nil {
		co.obs = co.ln.Observer
	}
	return co
}

func (co *Coordinator) check() error {
	if co == nil || co.c == nil {
		return fmt.Errorf("%w: Coordinator without a client (use coordination.New)", ErrInvalidArg)
	}
	return nil
}

// checkPair validates two keys one script writes together: both set, distinct, and in
// one Cluster slot once the client's key prefix is applied.
func (co *Coordinator) checkPair(what1, key1, what2, key2 string) error {
	switch {
	case key1 == "":
		return fmt.Errorf("%w: empty %s key", ErrInvalidArg, what1)
	case key2 == "":
		return fmt.Errorf("%w: empty %s key", ErrInvalidArg, what2)
	case key1 == key2:
		return fmt.Errorf("%w: %s and %s are the same key %q", ErrInvalidArg, what1, what2, key1)
	}
	prefix := co.ln.Prefix
	// Checked on every deployment, not only on a Cluster: the pair a test accepts on one
	// server must not be refused in production.
	if s1, s2 := cluster.PrefixedSlot(prefix, key1), cluster.PrefixedSlot(prefix, key2); s1 != s2 {
		with := ""
		if prefix != "" {
			with = fmt.Sprintf(" with the key prefix %q", prefix)
		}
		return &crossSlotError{fmt.Sprintf("%s key %q is in slot %d and %s key %q in slot %d%s; give both one {hash tag}",
			what1, key1, s1, what2, key2, s2, with)}
	}
	return nil
}

// crossSlotError is the error for a pair of keys in different slots. It matches both
// ErrCrossSlot and respire.ErrCrossSlot, and says so once.
type crossSlotError struct{ detail string }

func (e *crossSlotError) Error() string { return ErrCrossSlot.Error() + ": " + e.detail }

func (e *crossSlotError) Unwrap() []error { return []error{ErrCrossSlot, respire.ErrCrossSlot} }

// checkTTL returns ttl in milliseconds, the unit of the lease's PX.
func checkTTL(ttl time.Duration) (int64, error) {
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("%w: TTL %v is under a millisecond", ErrInvalidArg, ttl)
	}
	return ttl.Milliseconds(), nil
}
