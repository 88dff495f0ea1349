package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

// Example_fromRedsync is redsync's mutex over three pools, as a Redlock group over
// three standalone clients. redsync's Lock retries (WithTries, WithRetryDelay); the
// group's TryAcquire does with lock.WithWait (ExampleRedlockGroup_TryAcquire_wait).
func Example_fromRedsync() {
	ctx := context.Background()
	// Before:
	//	rs := redsync.New(goredis.NewPool(a), goredis.NewPool(b), goredis.NewPool(c))
	//	mu := rs.NewMutex("reports:daily", redsync.WithExpiry(30*time.Second))
	//	if err := mu.LockContext(ctx); err != nil { ... }
	//	defer mu.UnlockContext(ctx)
	//	ok, err := mu.ExtendContext(ctx)
	var clients []*respire.Client
	for _, url := range strings.Fields(os.Getenv("REDIS_URLS")) { // three independent servers
		c, err := respire.Connect(ctx, url)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	g, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err) // even, too small, a Cluster/Sentinel client, or one client twice
	}
	rl, ok, err := g.TryAcquire(ctx, "example:redsync:daily", 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err) // no quorum: contention or unavailable servers, not proof of another owner
	}
	defer rl.Close()
	// ExtendContext becomes an explicit renewal that must reach a quorum in time
	// (or lock.WithKeepAlive() at acquisition, which renews by itself).
	if ok, err := rl.ResetExpiry(ctx, 30*time.Second); !ok {
		log.Fatalf("stop: the lease is lost (%v)", err)
	}
	// Valid is VerifyStillHeld (a quorum holds the token); Until is ValidUntilEstimate.
	valid, err := rl.VerifyStillHeld(ctx)
	fmt.Println("valid:", valid, err, time.Until(rl.ValidUntilEstimate()) > 25*time.Second)
	// UnlockContext becomes Release: true when a quorum confirmed.
	released, err := rl.Release(ctx)
	fmt.Println("released:", released, err)
	// Output:
	// valid: true <nil> true
	// released: true <nil>
}

// Example_fromRedislock is bsm/redislock with Options.FenceKey, as a fenced lock whose
// token a fenced resource checks.
func Example_fromRedislock() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	// Before:
	//	l, err := redislock.Obtain(ctx, rdb, "{example:invoice}:lease", 30*time.Second,
	//		&redislock.Options{FenceKey: "{example:invoice}:fence"})
	//	write(l.FenceToken())
	//	defer l.Release(ctx)
	co := coordination.New(c)
	fl, ok, err := co.TryAcquireFencedLock(ctx, "{example:invoice}:lease", "{example:invoice}:fence", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		return // redislock.ErrNotObtained
	}
	defer fl.Close()
	// The resource, not the caller, refuses a token below the highest it accepted.
	invoice, err := co.Resource("{example:invoice}:body", "{example:invoice}:accepted")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := invoice.Write(ctx, fl.FencingToken(), "SET", "paid"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("written under token", fl.FencingToken())
	// Output: written under token 1
}

// Example_fromRueidislock is rueidislock's WithContext, whose context ends when the
// lock is lost, as a lock of package lock with a keep-alive. rueidislock's KeyMajority
// keys live on one deployment: they are not independent votes, and neither is this.
func Example_fromRueidislock() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	// Before:
	//	locker, _ := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: opt})
	//	lockCtx, cancel, err := locker.WithContext(ctx, "example:sync")
	//	defer cancel()
	mu, err := lock.New(c).Acquire(ctx, "example:sync", 30*time.Second,
		lock.WithWait(5*time.Second), lock.WithKeepAlive())
	if err != nil {
		log.Fatal(err) // errors.Is(err, lock.ErrNotAcquired) after the wait
	}
	defer mu.Close()
	lockCtx := mu.KeepAliveContext() // ends, with a cause, when renewal fails or the lock is lost
	fmt.Println("working:", lockCtx.Err() == nil)
	// Output: working: true
}

// Example_semaphore is DistributedLock.Redis's RedisDistributedSemaphore: every
// participant uses the same key and capacity, and every permit expires.
func Example_semaphore() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	sem := coordination.New(c).Semaphore("example:exports", 2)
	p, ok, err := sem.TryAcquire(ctx, 30*time.Second)
	if err != nil {
		log.Fatal(err) // errors.Is(err, coordination.ErrCapacityMismatch): participants disagree
	}
	if !ok {
		return // every permit is held: retry under your own budget
	}
	defer p.Close()
	// Renew explicitly (or keep alive: lock.WithKeepAlive()), and stop when renewal fails.
	if ok, err := p.ResetExpiry(ctx, 30*time.Second); !ok {
		log.Fatal("permit lost: ", err)
	}
	out, err := p.Release(ctx)
	fmt.Println(out, err)
	// Output: released <nil>
}

// Example_readWriteLock is DistributedLock.Redis's RedisDistributedReaderWriterLock on
// one deployment: immediate attempts, explicit renewal, no fairness.
func Example_readWriteLock() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	co := coordination.New(c)
	r, ok, err := co.TryAcquireReadLock(ctx, "example:catalog", 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	defer r.Close()
	_, writable, err := co.TryAcquireWriteLock(ctx, "example:catalog", 30*time.Second)
	fmt.Println("writer beside a reader:", writable, err)
	// Output: writer beside a reader: false <nil>
}

// acquireAll takes every key or none: in one global order (sorted), so that two
// callers wanting overlapping sets cannot each hold what the other waits for, under one
// wait budget for the whole set, releasing the earlier handles if any acquisition
// fails. It is not an atomic multi-resource transaction: renew (or keep alive) every
// handle, and treat the loss of any as the loss of the set.
func acquireAll(ctx context.Context, locks *lock.Locker, keys []string, ttl, wait time.Duration) ([]*lock.Lock, error) {
	keys = slices.Sorted(slices.Values(keys))
	keys = slices.Compact(keys)
	budget, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	deadline, _ := budget.Deadline()
	held := make([]*lock.Lock, 0, len(keys))
	for _, key := range keys {
		mu, err := locks.Acquire(budget, key, ttl,
			lock.WithWait(max(time.Until(deadline), time.Millisecond)),
			lock.WithRetry(lock.ExponentialRetry(10*time.Millisecond, 200*time.Millisecond)))
		if err != nil {
			for _, h := range held {
				h.Close()
			}
			return nil, fmt.Errorf("acquiring %s: %w", key, err)
		}
		held = append(held, mu)
	}
	return held, nil
}

// Example_acquireAll replaces TryAcquireAllLocksAsync and similar composite helpers.
func Example_acquireAll() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	held, err := acquireAll(ctx, lock.New(c), []string{"example:acct:2", "example:acct:1"}, 30*time.Second, 2*time.Second)
	if errors.Is(err, lock.ErrNotAcquired) {
		return // one of them stayed busy for the whole budget; nothing is held
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range held {
		defer h.Close()
	}
	fmt.Println(held[0].Key(), held[1].Key())
	// Output: example:acct:1 example:acct:2
}

// Example_fromRedislockMetadata is bsm/redislock's Options.Metadata and TTL: the
// metadata is the owner token itself, chosen by the caller (TryTake with a token of
// its own, then Adopt for a managed handle), and TTL is the handle's estimate or the
// server's answer to VerifyStillHeld.
func Example_fromRedislockMetadata() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	// Before:
	//	l, err := redislock.Obtain(ctx, rdb, "example:job", 30*time.Second,
	//		&redislock.Options{Metadata: "worker-7"})
	//	fmt.Println(l.Metadata()); ttl, err := l.TTL(ctx)
	locks := lock.New(c)
	token := lock.TokenFromString("worker-7:" + lock.NewToken().String()) // unique, readable by others
	start := time.Now()
	ok, err := locks.TryTake(ctx, "example:job", token, 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err) // !ok: redislock.ErrNotObtained
	}
	mu, err := locks.Adopt("example:job", token, 30*time.Second, start)
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Close()
	owner, _, err := locks.OwnerToken(ctx, "example:job") // what another process reads
	if err != nil {
		log.Fatal(err)
	}
	meta, _ := owner.Text()
	held, err := mu.VerifyStillHeld(ctx) // l.TTL(ctx) > 0
	fmt.Println(meta[:len("worker-7")], held, err, mu.RemainingEstimate() > 29*time.Second)
	// Output: worker-7 true <nil> true
}

// Example_lostTokenFencedWrite is DistributedLock.Redis's mutex with HandleLostToken:
// a fenced lock with a keep-alive, whose context ends when the lease is lost, and a
// write that the resource refuses from a stale holder. Checking the context alone is
// not enough (a paused process can wake after its lease ended and before it notices);
// the fenced write is what protects the data.
func Example_lostTokenFencedWrite() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	co := coordination.New(c)
	// Before:
	//	await using var handle = await mutex.TryAcquireAsync(TimeSpan.FromSeconds(5));
	//	handle.HandleLostToken.Register(() => cancelWork());
	fl, ok, err := co.TryAcquireFencedLock(ctx, "{example:ledger}:lease", "{example:ledger}:fence", 30*time.Second,
		lock.WithWait(5*time.Second), lock.WithKeepAlive())
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	defer fl.Close()
	work := fl.KeepAliveContext() // HandleLostToken: ends, with its cause, on loss
	ledger, err := co.Resource("{example:ledger}:body", "{example:ledger}:accepted")
	if err != nil {
		log.Fatal(err)
	}
	write := func(value string) error {
		if err := work.Err(); err != nil {
			return context.Cause(work) // lost: stop before writing
		}
		_, err := ledger.Write(work, fl.FencingToken(), "SET", value)
		return err // errors.Is(err, coordination.ErrStaleToken): a newer holder wrote
	}
	fmt.Println(write("balance=120"))
	// Output: <nil>
}
