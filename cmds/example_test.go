package cmds_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cmds"
)

// connect opens a client on the server in REDIS_URL (the tests start one).
func connect() *respire.Client {
	c, err := respire.Connect(context.Background(), os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func Example() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	if _, err := cmds.Set("example:greeting", "hello").Expire(time.Minute).Do(ctx, c); err != nil {
		log.Fatal(err)
	}
	s, err := cmds.Get("example:greeting").Do(ctx, c)
	fmt.Println(s, err)

	_, err = cmds.Get("example:missing").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))

	cmds.ZAdd("example:board", cmds.Z{Member: "ann", Score: 3}, cmds.Z{Member: "bob", Score: 5}).Do(ctx, c)
	top, _ := cmds.ZRevRangeWithScores("example:board", 0, 0).Do(ctx, c)
	fmt.Println(top)
	// Output:
	// hello <nil>
	// true
	// [{bob 5}]
}

func ExamplePipeline() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	p := cmds.NewPipeline(c)
	cmds.HSet("example:user", cmds.FieldValue{Field: "name", Value: "Ann"}, cmds.FieldValue{Field: "visits", Value: 1}).In(p)
	visits := cmds.HIncrBy("example:user", "visits", 1).In(p)
	user := cmds.HGetAll("example:user").In(p)
	if err := p.Exec(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(visits.Val(), user.Val()["name"])
	// Output: 2 Ann
}

func ExampleNewTxPipeline() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	var n cmds.Reply[int64]
	err := c.Watch(ctx, func(tx *respire.Tx) error {
		p := cmds.NewTxPipeline(tx)
		cmds.Set("example:tx", 10).In(p)
		n = cmds.IncrBy("example:tx", 5).In(p)
		return p.Exec(ctx)
	}, "example:tx")
	fmt.Println(n.Val(), err)
	// Output: 15 <nil>
}
