package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
)

func client() *respire.Client {
	c, err := respire.Connect(context.Background(), os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleLocker_TryAcquire() {
	ctx := context.Background()
	c := client()
	defer c.Close()
	locks := lock.New(c)

	mu, ok, err := locks.TryAcquire(ctx, "example:report", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		return // another owner holds it
	}
	defer mu.Close()

	_, ok, _ = locks.TryAcquire(ctx, "example:report", 30*time.Second)
	fmt.Println("second owner acquired:", ok)
	// Output: second owner acquired: false
}

func ExampleLocker_Acquire_wait() {
	ctx := context.Background()
	c := client()
	defer c.Close()
	locks := lock.New(c)

	first, err := locks.Acquire(ctx, "example:nightly", 200*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		first.Release(ctx)
	}()
	// Waits up to 5 s, trying every 10 ms, for the first owner to let go.
	mu, err := locks.Acquire(ctx, "example:nightly", 30*time.Second,
		lock.WithWait(5*time.Second), lock.WithRetryEvery(10*time.Millisecond))
	if errors.Is(err, lock.ErrNotAcquired) {
		fmt.Println("still busy")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Close()
	fmt.Println("acquired after the first owner released")
	// Output: acquired after the first owner released
}

func ExampleLock_KeepAlive() {
	ctx := context.Background()
	c := client()
	defer c.Close()
	locks := lock.New(c)

	mu, err := locks.Acquire(ctx, "example:long-job", 300*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	defer mu.Close()
	ka, err := mu.KeepAlive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer ka.Stop()

	// Work for longer than the lease; stop if the keep-alive loses the lock.
	work := ka.Context()
	select {
	case <-time.After(time.Second):
		fmt.Println("work done, lock still held:", work.Err() == nil)
	case <-work.Done():
		fmt.Println("lost the lock:", context.Cause(work))
	}
	// Output: work done, lock still held: true
}

func ExampleLocker_TryTake() {
	ctx := context.Background()
	c := client()
	defer c.Close()
	locks := lock.New(c)

	token := lock.TokenFromString("worker-42") // shared with another process, say
	ok, err := locks.TryTake(ctx, "example:shared", token, 30*time.Second)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	owner, _, _ := locks.OwnerToken(ctx, "example:shared")
	fmt.Println(owner == token)
	released, _ := locks.Release(ctx, "example:shared", token)
	fmt.Println(released)
	// Output:
	// true
	// true
}
