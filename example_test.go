package respire_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// connect opens a client on the server in REDIS_URL (the tests start one).
func connect() *respire.Client {
	c, err := respire.Connect(context.Background(), os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleConnect() {
	ctx := context.Background()
	c, err := respire.Connect(ctx, os.Getenv("REDIS_URL")) // e.g. "redis://user:pass@127.0.0.1:6379/0"
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "example:greeting", "hello", "PX", 30000); err != nil {
		log.Fatal(err)
	}
	v, err := c.Do(ctx, "GET", "example:greeting")
	if err != nil {
		log.Fatal(err)
	}
	s, _ := v.Text()
	fmt.Println(s)
	// Output: hello
}

func ExampleClient_Do() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	n, _ := c.Do(ctx, "INCRBY", "example:counter", 5)
	fmt.Println(n.Int())

	missing, _ := c.Do(ctx, "GET", "example:missing")
	fmt.Println(missing.IsNull())

	_, err := c.Do(ctx, "LPUSH", "example:counter", "x")
	var se *resp.ServerError
	fmt.Println(errors.As(err, &se), se.Code)
	// Output:
	// 5 <nil>
	// true
	// true WRONGTYPE
}

func ExampleClient_Do_cancellation() {
	c := connect()
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the caller gives up before the command is sent
	_, err := c.Do(ctx, "INCR", "example:never")
	fmt.Println(errors.Is(err, conn.ErrNotSent), errors.Is(err, context.Canceled))
	// Output: true true
}

func ExampleClient_DoMulti() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	res, err := c.DoMulti(ctx,
		[]any{"SET", "example:a", 1},
		[]any{"INCRBY", "example:a", 41},
		[]any{"HSET", "example:a", "f", "v"}, // fails alone: a is a string
		[]any{"GET", "example:a"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			fmt.Println("error:", r.Err)
			continue
		}
		fmt.Println(r.Value)
	}
	// Output:
	// "OK"
	// 42
	// error: WRONGTYPE Operation against a key holding the wrong kind of value
	// "42"
}

func ExampleClient_Pipeline() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	p := c.Pipeline()
	p.Do("DEL", "example:list").Do("RPUSH", "example:list", "a", "b", "c").Do("LRANGE", "example:list", 0, -1)
	res, err := p.Exec(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[2].Value)
	// Output: ["a", "b", "c"]
}

func ExampleClient_Watch() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "SET", "example:balance", 10)

	err := c.Watch(ctx, func(tx *respire.Tx) error {
		v, err := tx.Do(ctx, "GET", "example:balance")
		if err != nil {
			return err
		}
		n, _ := v.Int()
		_, err = tx.Exec(ctx, []any{"SET", "example:balance", n + 5})
		return err
	}, "example:balance")
	if errors.Is(err, respire.ErrTxFailed) {
		fmt.Println("someone else changed the balance; retry")
	}
	v, _ := c.Do(ctx, "GET", "example:balance")
	fmt.Println(v.Int())
	// Output: 15 <nil>
}

func ExampleClient_Subscribe() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	sub, err := c.Subscribe(ctx, "example:news")
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	// Publish until the subscription is registered on the server.
	for {
		n, _ := c.Do(ctx, "PUBLISH", "example:news", "hello")
		if i, _ := n.Int(); i > 0 {
			break
		}
	}
	m := <-sub.Messages()
	fmt.Println(m.Channel, m.Payload)
	// Output: example:news hello
}

var setIfHigher = respire.NewScript(`
if tonumber(redis.call('GET', KEYS[1]) or '-1') < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0`)

func ExampleScript_Run() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "DEL", "example:highscore")

	for _, score := range []int{10, 7, 12} {
		v, err := setIfHigher.Run(ctx, c, []string{"example:highscore"}, score)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(v, " ")
	}
	fmt.Println()
	// Output: 1 0 1
}

func ExampleClient_Scan() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "MSET", "example:scan:1", "a", "example:scan:2", "b")

	count := 0
	for _, err := range c.Scan(ctx, respire.ScanOptions{Match: "example:scan:*"}) {
		if err != nil {
			log.Fatal(err)
		}
		count++
	}
	fmt.Println(count)
	// Output: 2
}

func ExampleOptions_keyPrefix() {
	ctx := context.Background()
	opts, _ := respire.ParseURL(os.Getenv("REDIS_URL"))
	opts.KeyPrefix = "tenant42:"
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	c.Do(ctx, "MSET", "a", 1, "b", 2) // stores tenant42:a and tenant42:b
	plain := connect()
	defer plain.Close()
	v, _ := plain.Do(ctx, "MGET", "tenant42:a", "tenant42:b", "a")
	fmt.Println(v)
	// Output: ["1", "2", (nil)]
}

func ExampleClient_DoCached() {
	ctx := context.Background()
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	opts.ClientSideCache = &cache.Options{MaxEntries: 1000}
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	c.Do(ctx, "SET", "example:flags", "dark-mode")
	for range 3 { // one round trip, then two answers from memory
		v, _ := c.DoCached(ctx, time.Minute, "GET", "example:flags")
		fmt.Println(v.Text())
	}
	st := c.CacheStats()
	fmt.Println(st.Misses, st.Hits)

	// Another connection changes the key; the server tells the cache to forget it.
	other := connect()
	defer other.Close()
	other.Do(ctx, "SET", "example:flags", "light-mode")
	for c.CacheStats().Invalidations == 0 {
		time.Sleep(time.Millisecond)
	}
	v, _ := c.DoCached(ctx, time.Minute, "GET", "example:flags")
	fmt.Println(v.Text())
	// Output:
	// dark-mode <nil>
	// dark-mode <nil>
	// dark-mode <nil>
	// 1 2
	// light-mode <nil>
}
