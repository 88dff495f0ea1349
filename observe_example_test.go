package respire_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"

	"github.com/respire/respire"
	"github.com/respire/respire/observe"
)

// commandCounter counts commands by name and outcome. Embedding observe.Base makes it
// an Observer that ignores every other event.
type commandCounter struct {
	observe.Base
	mu     sync.Mutex
	counts map[string]int
}

func (c *commandCounter) CommandEnd(_ context.Context, e observe.CommandEnd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[e.Name+" "+e.Outcome.String()]++
}

func ExampleOptions_observer() {
	ctx := context.Background()
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	counter := &commandCounter{counts: map[string]int{}}
	opts.Observer = counter
	// Reconnects, failovers, topology changes, fences and tracking losses as log lines.
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	c.Do(ctx, "SET", "example:observed", "v", "PX", 30000)
	c.Do(ctx, "GET", "example:observed")
	c.Do(ctx, "GET", "example:observed")
	c.Do(ctx, "INCR", "example:observed") // not an integer: an error reply

	counter.mu.Lock()
	defer counter.mu.Unlock()
	fmt.Println(counter.counts["SET ok"], counter.counts["GET ok"], counter.counts["INCR server_error"])
	// Output: 1 2 1
}
