package coordination

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/resp"
)

var (
	//go:embed scripts/semaphore_acquire.lua
	semaphoreAcquireSource string
	semaphoreAcquireScript = respire.NewScript(semaphoreAcquireSource)
)

// Semaphore is a counting semaphore on one key: at most its capacity of permits are
// held at once. Every permit expires (there is no permit without a TTL: a crashed
// holder's permit would leak for good), and expired permits are reclaimed by the next
// acquisition on the server's clock, not a client's. All participants must use the
// same key and capacity; a capacity that differs from the one the live permits were
// taken with is refused (ErrCapacityMismatch). A Semaphore is safe for concurrent use.
type Semaphore struct {
	co       *Coordinator
	key      string
	capacity int
}

// CapacityMismatchError is the error of a semaphore acquisition whose capacity differs
// from the one the semaphore's live permits were taken with. It matches
// ErrCapacityMismatch. Nothing was changed: the participants disagree, and honouring
// either number could admit more holders than the other expects.
type CapacityMismatchError struct {
	Key      string
	Capacity int   // this participant's
	Stored   int64 // the live permits'
}

func (e *CapacityMismatchError) Error() string {
	return fmt.Sprintf("coordination: semaphore %q has capacity %d, this participant uses %d: every participant must agree",
		e.Key, e.Stored, e.Capacity)
}

// Is matches ErrCapacityMismatch.
func (e *CapacityMismatchError) Is(target error) bool { return target == ErrCapacityMismatch }

// Semaphore returns the semaphore at key with capacity permits. It sends nothing; its
// arguments are checked by TryAcquire, before anything is sent (an empty key, a
// capacity under 1). The key holds a hash (the capacity and one field per permit);
// it must not be used for anything else, and it disappears with its last permit.
func (co *Coordinator) Semaphore(key string, capacity int) *Semaphore {
	return &Semaphore{co: co, key: key, capacity: capacity}
}

// Permit is a held permit of a Semaphore. It is safe for concurrent use. Renew it with
// ResetExpiry before it expires, or run the protected work under KeepAlive's context
// (lock.Lock's keep-alive); stop the work when renewal fails.
type Permit struct {
	*entry
}

// TryAcquire takes a permit for ttl, first reclaiming the permits whose TTL has passed
// on the server's clock. ok is false when every permit is held, and when the reply came
// at or after ttl from when the script was sent (that permit is given back on a
// best-effort basis). ttl must be positive.
//
// Options are package lock's: lock.WithWait(d) tries again while every permit is held
// until d has passed (ok false and a nil error when it ends so; the caller's own
// cancellation an error; a negative d refused), woken by the server's invalidation of
// the key where the client tracks keys, else polling with lock.WithRetry, and never
// later than the first held permit's expiry. lock.WithKeepAlive starts the permit's
// keep-alive once acquired (see KeepAlive and KeepAliveContext), owned by the permit:
// the acquisition's ctx does not control it.
//
// Cancellation cannot recall a script already written: such a permit stays until ttl
// ends.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...lock.Option) (*Permit, bool, error) {
	if s == nil {
		return nil, false, fmt.Errorf("%w: nil Semaphore (use Coordinator.Semaphore)", ErrInvalidArg)
	}
	ms, err := s.co.checkKeyTTL(s.key, ttl)
	if err != nil {
		return nil, false, err
	}
	if s.capacity < 1 {
		return nil, false, fmt.Errorf("%w: semaphore capacity %d is under 1", ErrInvalidArg, s.capacity)
	}
	e, err := s.co.acquireEntry(ctx, s.key, "p:", ttl, opts, func(ctx context.Context, field string) (bool, time.Duration, error) {
		return s.take(ctx, field, ms)
	})
	if e == nil {
		return nil, false, err
	}
	return &Permit{e}, true, nil
}

// take runs the acquisition script for the permit at field and reports whether it
// was granted and, when not, how long until the first held permit expires.
func (s *Semaphore) take(ctx context.Context, field string, ms int64) (bool, time.Duration, error) {
	v, err := semaphoreAcquireScript.Run(ctx, s.co.c, []string{s.key}, field, ms, s.capacity)
	if err != nil {
		return false, 0, err
	}
	if v.Kind() == resp.KindInteger {
		// A grant: asked of it, Array would allocate its error.
		return denied("semaphore", v)
	}
	if reply, err := v.Array(); err == nil && len(reply) == 2 {
		if code, err := reply[0].Int(); err == nil && code == -1 {
			text, _ := reply[1].Text()
			stored, _ := strconv.ParseInt(text, 10, 64)
			return false, 0, &CapacityMismatchError{Key: s.key, Capacity: s.capacity, Stored: stored}
		}
	}
	return denied("semaphore", v)
}

// Key returns the semaphore's key as given, without the client's key prefix.
func (s *Semaphore) Key() string { return s.key }

// Capacity returns how many permits may be held at once.
func (s *Semaphore) Capacity() int { return s.capacity }

// Close releases the permit on a best-effort basis, as a deferred call should; a
// permit it cannot reach frees itself at its TTL. It returns only a server's refusal
// (such as NOPERM). It is a no-op on a nil permit, so it can be deferred before
// checking ok.
func (p *Permit) Close() error {
	if p == nil {
		return nil
	}
	return p.close()
}
