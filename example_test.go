package respire_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
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

// The examples in this file are go-redis idioms through Client.Do and the client's own
// API: docs/from-go-redis.md takes its client options and Cluster snippets from here,
// and its typed commands from cmds/fromgoredis_example_test.go.

// go-redis: redis.NewClient(&redis.Options{Addr, Password, DB, PoolSize, ...}).
func Example_fromGoRedisOptions() {
	ctx := context.Background()
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL")) // or fill respire.Options by hand
	if err != nil {
		log.Fatal(err)
	}
	opts.ClientName = "billing"
	opts.ReadTimeout = 2 * time.Second
	opts.PoolSize = 20 // dedicated connections only: blocking commands, transactions
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	v, err := c.Do(ctx, "PING")
	fmt.Println(v, err)
	// Output: "PONG" <nil>
}

// go-redis: val, err := rdb.Get(ctx, key).Result(); if err == redis.Nil { ... }.
func Example_fromGoRedisNil() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "DEL", "migrate:missing")

	v, err := c.Do(ctx, "GET", "migrate:missing")
	if err != nil {
		log.Fatal(err) // transport or server errors only: a missing key is not an error
	}
	if v.IsNull() {
		fmt.Println("no such key")
	}
	// Output: no such key
}

// go-redis: typed results (IntCmd, StringSliceCmd, MapStringStringCmd) become accessors
// on one resp.Value.
func Example_fromGoRedisTypedResults() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "DEL", "migrate:h")
	c.Do(ctx, "HSET", "migrate:h", "name", "ada", "visits", 3)

	n, _ := c.Do(ctx, "HINCRBY", "migrate:h", "visits", 1)
	visits, err := n.Int() // IntCmd.Result()
	fmt.Println(visits, err)

	all, _ := c.Do(ctx, "HGETALL", "migrate:h")
	m, err := all.Map() // MapStringStringCmd.Result(), over RESP2 and RESP3 alike
	name, _ := m["name"].Text()
	fmt.Println(name, len(m), err)

	_, err = c.Do(ctx, "LPOP", "migrate:h")
	var se *resp.ServerError
	fmt.Println(errors.As(err, &se) && se.Code == "WRONGTYPE")
	// Output:
	// 4 <nil>
	// ada 2 <nil>
	// true
}

// go-redis: rdb.Pipelined(ctx, func(p redis.Pipeliner) error { ... }).
func Example_fromGoRedisPipelined() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	res, err := c.DoMulti(ctx,
		[]any{"SET", "migrate:p", 1},
		[]any{"INCR", "migrate:p"},
		[]any{"GET", "migrate:p"})
	if err != nil {
		log.Fatal(err) // the batch as a whole failed; per-command errors are in res[i].Err
	}
	fmt.Println(res[2].Value.Text())
	// Output: 2 <nil>
}

// go-redis: rdb.TxPipelined(ctx, fn), MULTI/EXEC without WATCH.
func Example_fromGoRedisTxPipelined() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	err := c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx,
			[]any{"SET", "migrate:tx", 10},
			[]any{"INCRBY", "migrate:tx", 5})
		return err
	}) // no keys: a plain MULTI/EXEC
	v, _ := c.Do(ctx, "GET", "migrate:tx")
	fmt.Println(v.Text())
	fmt.Println(err)
	// Output:
	// 15 <nil>
	// <nil>
}

// go-redis: rdb.Watch(ctx, fn, keys...) with redis.TxFailedErr.
func Example_fromGoRedisWatch() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "SET", "migrate:stock", 3)

	for attempt := 0; attempt < 3; attempt++ {
		err := c.Watch(ctx, func(tx *respire.Tx) error {
			v, err := tx.Do(ctx, "GET", "migrate:stock")
			if err != nil {
				return err
			}
			n, _ := v.Int()
			_, err = tx.Exec(ctx, []any{"SET", "migrate:stock", n - 1})
			return err
		}, "migrate:stock")
		if errors.Is(err, respire.ErrTxFailed) { // redis.TxFailedErr
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	v, _ := c.Do(ctx, "GET", "migrate:stock")
	fmt.Println(v.Text())
	// Output: 2 <nil>
}

// go-redis: pubsub := rdb.Subscribe(ctx, ch); for msg := range pubsub.Channel() { ... }.
func Example_fromGoRedisPubSub() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	sub, err := c.Subscribe(ctx, "migrate:events")
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	for { // Subscribe returns once the server confirmed; publish until a receiver counts
		n, _ := c.Do(ctx, "PUBLISH", "migrate:events", "deployed")
		if i, _ := n.Int(); i > 0 {
			break
		}
	}
	m := <-sub.Messages()
	fmt.Println(m.Channel, m.Payload, sub.Dropped())
	// Output: migrate:events deployed 0
}

// go-redis: redis.NewScript(src).Run(ctx, rdb, keys, args...).
func Example_fromGoRedisScript() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	double := respire.NewScript(`return tonumber(ARGV[1]) * 2`) // EVALSHA, EVAL on NOSCRIPT
	v, err := double.Run(ctx, c, nil, 21)
	fmt.Println(v, err)
	// Output: 42 <nil>
}

// go-redis: iter := rdb.Scan(ctx, 0, match, count).Iterator(); for iter.Next(ctx) { ... }.
func Example_fromGoRedisScan() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	c.Do(ctx, "MSET", "migrate:scan:a", 1, "migrate:scan:b", 2)

	n := 0
	for key, err := range c.Scan(ctx, respire.ScanOptions{Match: "migrate:scan:*", Count: 100}) {
		if err != nil { // iter.Err()
			log.Fatal(err)
		}
		_ = key
		n++
	}
	fmt.Println(n)
	// Output: 2
}

// go-redis: redis.NewClusterClient / redis.NewFailoverClient become options of the one
// client type.
func Example_fromGoRedisClusterAndFailover() {
	cluster, err := respire.ParseURL("redis+cluster://10.0.0.1:7000,10.0.0.2:7000")
	cluster.ReplicaReads = true // ClusterOptions.ReadOnly
	fmt.Println(cluster.Cluster, cluster.Addrs, err)

	failover, err := respire.ParseURL("redis+sentinel://10.0.0.5,10.0.0.6/mymaster?replica_reads=true")
	fmt.Println(failover.SentinelMaster, failover.Addrs, failover.ReplicaReads, err)
	// Output:
	// true [10.0.0.1:7000 10.0.0.2:7000] <nil>
	// mymaster [10.0.0.5:26379 10.0.0.6:26379] true <nil>
}
