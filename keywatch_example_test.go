package respire_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
)

func ExampleClient_WatchKey() {
	ctx := context.Background()
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	opts.ClientSideCache = &cache.Options{} // WatchKey uses the cache's RESP3 tracking
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "example:job", "running", "PX", 60000); err != nil {
		log.Fatal(err)
	}
	w, err := c.WatchKey(ctx, "example:job")
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	fmt.Println("exists:", w.Exists(), "TTL over 59 s:", w.TTL() > 59*time.Second)

	go c.Do(ctx, "DEL", "example:job") // another process, say
	// Sleeps until the server reports the change, or the TTL read on arming runs out.
	if err := w.Wait(ctx, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Println("changed")
	// Output:
	// exists: true TTL over 59 s: true
	// changed
}
