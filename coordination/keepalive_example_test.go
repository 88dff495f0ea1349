package coordination_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

// ExampleSemaphore_TryAcquire_keepAlive holds a permit while its work runs, renewed by
// a keep-alive as DistributedLock.Redis's semaphore renews itself, and runs the work
// under a context that ends, with its cause, if the permit is lost.
func ExampleSemaphore_TryAcquire_keepAlive() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	sem := coordination.New(c).Semaphore("example:exports:kept", 2)
	// Wait up to 5 s for a permit; renew it at half its TTL until it is released.
	p, ok, err := sem.TryAcquire(ctx, 30*time.Second, lock.WithWait(5*time.Second), lock.WithKeepAlive())
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		fmt.Println("every permit was held for the whole wait")
		return
	}
	defer p.Close()
	work := p.KeepAliveContext()
	// ... the export runs under work, and stops when it ends:
	// context.Cause(work) is lock.ErrLeaseLost, lock.ErrOwnershipUncertain or
	// lock.ErrLeaseExpired when the permit is lost ...
	out, err := p.Release(ctx)
	fmt.Println(out, err, context.Cause(work))
	// Output: released <nil> lock: released
}

// ExampleRedlockGroup_TryAcquire_wait waits for a Redlock with jittered retries under
// one budget (RedLock.net's wait and retry, redsync's tries), keeps it alive on a
// quorum while the work runs (RedLock.net's automatic extension), and checks it on the
// servers (redsync's Valid).
func ExampleRedlockGroup_TryAcquire_wait() {
	ctx := context.Background()
	var clients []*respire.Client
	for _, url := range strings.Fields(os.Getenv("REDIS_URLS")) { // three independent servers
		c, err := respire.Connect(ctx, url)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close() // after the lease's Close below: the group does not own its clients
		clients = append(clients, c)
	}
	g, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	rl, ok, err := g.TryAcquire(ctx, "example:reports:daily", 30*time.Second,
		lock.WithWait(5*time.Second), lock.WithKeepAlive())
	if err != nil {
		log.Fatal(err) // the caller's cancellation, a refused group, or the last attempt's ErrNoQuorum
	}
	if !ok {
		fmt.Println("held by another owner for the whole wait")
		return
	}
	defer rl.Close()
	work := rl.KeepAliveContext() // ends with its cause when a quorum renewal fails
	// ... the protected work runs under work ...
	held, err := rl.VerifyStillHeld(ctx)
	fmt.Println("held by a quorum:", held, err, "valid until set:", !rl.ValidUntilEstimate().IsZero())
	released, err := rl.Release(ctx)
	fmt.Println("released:", released, err, context.Cause(work))
	// Output:
	// held by a quorum: true <nil> valid until set: true
	// released: true <nil> lock: released
}
