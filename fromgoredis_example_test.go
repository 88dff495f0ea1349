package respire_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
)

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
