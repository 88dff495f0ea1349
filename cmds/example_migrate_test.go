package cmds_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/respire/respire/cmds"
)

// The examples below are the typed forms of go-redis calls services use most; each
// names the go-redis call it replaces.

// rdb.Get(ctx, key).Result() with redis.Nil for a missing key.
func ExampleGet() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.Set("example:get", "v").Do(ctx, c)
	v, err := cmds.Get("example:get").Do(ctx, c)
	fmt.Println(v, err)
	_, err = cmds.Get("example:get:missing").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))
	// Output:
	// v <nil>
	// true
}

// rdb.SetNX(ctx, key, value, ttl) and rdb.Set(ctx, key, value, ttl).
func ExampleSet() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	_, err := cmds.Set("example:set", "first").NX().Expire(time.Minute).Do(ctx, c)
	fmt.Println(err)
	_, err = cmds.Set("example:set", "second").NX().Expire(time.Minute).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // NX did not set
	old, _ := cmds.Set("example:set", "third").Get().KeepTTL().Do(ctx, c)
	fmt.Println(old)
	// Output:
	// <nil>
	// true
	// first
}

// rdb.MGet(ctx, keys...) with nil for missing keys.
func ExampleMGet() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.MSet(cmds.KeyValue{Key: "example:m1", Value: 1}).Do(ctx, c)
	vs, _ := cmds.MGet("example:m1", "example:m2").Do(ctx, c)
	for _, v := range vs {
		fmt.Println(v.V, v.Valid)
	}
	// Output:
	// 1 true
	//  false
}

// rdb.HSet(ctx, key, "field", value, ...), rdb.HGetAll(ctx, key).Scan(&v).
func ExampleScanMap() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.HSet("example:user:1", cmds.FieldValue{Field: "name", Value: "Ann"}, cmds.FieldValue{Field: "visits", Value: 7}).Do(ctx, c)
	m, err := cmds.HGetAll("example:user:1").Do(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	var u struct {
		Name   string `redis:"name"`
		Visits int    `redis:"visits"`
	}
	fmt.Println(cmds.ScanMap(m, &u), u.Name, u.Visits)
	// Output: <nil> Ann 7
}

// rdb.LPush and rdb.BRPop(ctx, timeout, keys...).
func ExampleBRPop() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.LPush("example:queue", "job1").Do(ctx, c)
	kv, err := cmds.BRPop([]string{"example:queue"}, time.Second).Do(ctx, c)
	fmt.Println(kv, err)
	_, err = cmds.BRPop([]string{"example:queue"}, 10*time.Millisecond).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // timed out
	// Output:
	// [example:queue job1] <nil>
	// true
}

// rdb.ZAdd, rdb.ZRevRangeWithScores, rdb.ZScore.
func ExampleZRevRangeWithScores() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.ZAdd("example:scores", cmds.Z{Member: "ann", Score: 3}, cmds.Z{Member: "bob", Score: 5}).Do(ctx, c)
	cmds.ZIncrBy("example:scores", 4, "ann").Do(ctx, c)
	zs, _ := cmds.ZRevRangeWithScores("example:scores", 0, -1).Do(ctx, c)
	fmt.Println(zs)
	// Output: [{ann 7} {bob 5}]
}

// rdb.XAdd(ctx, &redis.XAddArgs{...}), rdb.XGroupCreateMkStream, rdb.XReadGroup, rdb.XAck.
func ExampleXReadGroup() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	cmds.XGroupCreate("example:events", "workers").ID("$").MkStream().Do(ctx, c)
	id, _ := cmds.XAdd("example:events", cmds.FieldValue{Field: "type", Value: "signup"}).AutoID().Do(ctx, c)
	streams, err := cmds.XReadGroup("workers", "w1", cmds.StreamID{Key: "example:events", ID: ">"}).Count(10).Do(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	msg := streams[0].Messages[0]
	fmt.Println(msg.ID == id, msg.Values["type"])
	n, _ := cmds.XAck("example:events", "workers", msg.ID).Do(ctx, c)
	fmt.Println(n)
	// Output:
	// true signup
	// 1
}

// for iter := rdb.Scan(ctx, 0, match, count).Iterator(); iter.Next(ctx); { ... }
func ExampleScan() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	for _, k := range []string{"example:scan:a", "example:scan:b"} {
		cmds.Set(k, 1).Do(ctx, c)
	}
	var keys []string
	var cursor uint64
	for {
		page, err := cmds.Scan(cursor).Match("example:scan:*").Count(100).Do(ctx, c)
		if err != nil {
			log.Fatal(err)
		}
		keys = append(keys, page.Elems...)
		if cursor = page.Cursor; cursor == 0 {
			break
		}
	}
	slices.Sort(keys)
	fmt.Println(keys)
	// Output: [example:scan:a example:scan:b]
}

// rdb.ScriptLoad and rdb.EvalSha(ctx, sha, keys, args...).
func ExampleEvalSha() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	sha, _ := cmds.ScriptLoad("return redis.call('INCRBY', KEYS[1], ARGV[1])").Do(ctx, c)
	v, err := cmds.EvalSha(sha, []string{"example:script"}, 5).Do(ctx, c)
	fmt.Println(v, err)
	// Output: 5 <nil>
}

// rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error { ... }); for TxPipelined, the
// same inside Client.Watch with NewTxPipeline (see its example).
func ExampleNewPipeline_pipelined() {
	ctx := context.Background()
	c := connect()
	defer c.Close()

	p := cmds.NewPipeline(c)
	incr := cmds.Incr("example:hits").In(p)
	ttl := cmds.Expire("example:hits", time.Hour).In(p)
	if err := p.Exec(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(incr.Val(), ttl.Val())
	// Output: 1 true
}
