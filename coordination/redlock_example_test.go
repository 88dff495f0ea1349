package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
)

// ExampleRedlockGroup_TryAcquire takes a lease on a majority of three independent
// servers in one attempt and renews it explicitly, working in steps that fit its
// validity. For a wait and a keep-alive, see ExampleRedlockGroup_TryAcquire_wait.
func ExampleRedlockGroup_TryAcquire() {
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
	g, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: time.Second, DriftFactor: 0.01})
	if err != nil {
		log.Fatal(err)
	}

	rl, ok, err := g.TryAcquire(ctx, "example:reports:steps", 30*time.Second)
	switch {
	case errors.Is(err, coordination.ErrNoQuorum):
		return // too few servers answered: not proof of another owner
	case err != nil:
		log.Fatal(err)
	case !ok:
		return // another owner holds it on a quorum
	}
	defer rl.Close()

	// Work in steps that fit the validity; renew well before it ends, and stop if
	// renewal fails.
	for step := range 3 {
		if rl.RemainingEstimate() < 29*time.Second {
			if ok, err := rl.ResetExpiry(ctx, 30*time.Second); !ok {
				log.Printf("lease lost at step %d: %v", step, err)
				return
			}
		}
		// ... one step of the protected work ...
	}
	released, err := rl.Release(ctx)
	fmt.Println("released by a quorum:", released, err)
	// Output: released by a quorum: true <nil>
}
