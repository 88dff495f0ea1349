package lock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/respire/respire/lock"
)

func ExampleWithRetry() {
	ctx := context.Background()
	c := client()
	defer c.Close()
	locks := lock.New(c)

	first, err := locks.Acquire(ctx, "example:backoff", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	// Polls with random pauses of up to 1, 2, 4, ... ms, capped at 50 ms, and gives up
	// after 5 tries or 2 s, whichever comes first. On a client with ClientSideCache the
	// wait would sleep on the key's invalidation instead.
	_, ok, err := locks.TryAcquire(ctx, "example:backoff", 30*time.Second,
		lock.WithWait(2*time.Second),
		lock.WithRetry(lock.ExponentialRetry(time.Millisecond, 50*time.Millisecond)),
		lock.WithMaxAttempts(5))
	fmt.Println(ok, err)
	// Output: false <nil>
}
