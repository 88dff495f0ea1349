package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

func client(tracking bool) *respire.Client {
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	if tracking {
		// AcquireFencedLock waits on RESP3 tracking, which the client-side cache runs.
		opts.ClientSideCache = &cache.Options{}
	}
	c, err := respire.NewClient(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleCoordinator_TryAcquireFencedLock() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	co := coordination.New(c)

	fl, ok, err := co.TryAcquireFencedLock(ctx, "{example:report}:lease", "{example:report}:fence", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		return // another owner holds it
	}
	defer fl.Close()
	ka, err := fl.KeepAlive(ctx) // acquiring alone does not start renewal
	if err != nil {
		log.Fatal(err)
	}
	defer ka.Stop()

	// Every protected write presents the fencing token; the resource checks it.
	report, err := co.Resource("{example:report}:body", "{example:report}:accepted")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := report.Write(ka.Context(), fl.FencingToken(), "SET", "monthly totals"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("written with token", fl.FencingToken())
	// Output: written with token 1
}

func ExampleCoordinator_AcquireFencedLock() {
	ctx := context.Background()
	c := client(true)
	defer c.Close()
	co := coordination.New(c)

	first, ok, err := co.TryAcquireFencedLock(ctx, "{example:nightly}:lease", "{example:nightly}:fence", 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		first.Release(ctx)
	}()

	// Waits, without polling, until the first owner lets go, for as long as ctx
	// allows: for a wait budget, see the TryAcquireFencedLock example.
	fl, err := co.AcquireFencedLock(ctx, "{example:nightly}:lease", "{example:nightly}:fence", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer fl.Close()
	fmt.Println("acquired after the first owner, token above its:", fl.FencingToken() > first.FencingToken())
	// Output: acquired after the first owner, token above its: true
}

// A bounded wait, as DistributedLock's TryAcquireAsync(timeout): "not acquired" when
// the budget ends with the lease still held, an error for the caller's own
// cancellation or a failure, one immediate attempt for a zero budget.
func ExampleCoordinator_TryAcquireFencedLock_wait() {
	ctx := context.Background()
	c := client(true)
	defer c.Close()
	co := coordination.New(c)
	const lease, fence = "{example:weekly}:lease", "{example:weekly}:fence"

	first, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	_, ok, err = co.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second, lock.WithWait(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("acquired while held:", ok)

	go func() {
		time.Sleep(50 * time.Millisecond)
		first.Release(ctx)
	}()
	fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second,
		lock.WithWait(5*time.Second), lock.WithKeepAlive())
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		fmt.Println("still busy after 5 s")
		return
	}
	defer fl.Close()
	fmt.Println("acquired once released:", ok, fl.KeepAliveContext().Err() == nil)
	// Output:
	// acquired while held: false
	// acquired once released: true true
}

func ExampleResource_Write() {
	ctx := context.Background()
	c := client(false)
	defer c.Close()
	co := coordination.New(c)
	account, err := co.Resource("{example:account}:balance", "{example:account}:accepted")
	if err != nil {
		log.Fatal(err)
	}

	// A holder with token 8 wrote; one that paused with token 7 writes late.
	if _, err := account.Write(ctx, 8, "SET", "120"); err != nil {
		log.Fatal(err)
	}
	_, err = account.Write(ctx, 7, "SET", "100")
	fmt.Println(errors.Is(err, coordination.ErrStaleToken))
	var stale *coordination.StaleTokenError
	if errors.As(err, &stale) {
		fmt.Println("refused", stale.Token, "after", stale.Highest)
	}
	// Output:
	// true
	// refused 7 after 8
}
