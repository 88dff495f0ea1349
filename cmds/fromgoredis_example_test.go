package cmds_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cmds"
	"github.com/respire/respire/resp"
)

// The examples in this file are the snippets of docs/from-go-redis.md, one per group
// of its tables: each line names the go-redis call it replaces, so that the document
// can show them side by side and go test keeps every row true. Their keys start with
// "fromgoredis:" so that they share the examples' server with no other example.

// Strings: Get, Set and its options, SetNX, SetXX, SetEx, GetSet, GetDel, GetEx and
// the ranges.
func Example_fromGoRedisStrings() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:str"
	cmds.Del(k, k+":ex").Do(ctx, c)

	_, err := cmds.Set(k, "v1").Do(ctx, c) // rdb.Set(ctx, k, "v1", 0)
	fmt.Println(err)
	v, err := cmds.Get(k).Do(ctx, c) // rdb.Get(ctx, k).Result()
	fmt.Println(v, err)
	_, err = cmds.Get(k+":missing").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // err == redis.Nil

	// rdb.Set(ctx, k, "v2", time.Minute): EX, or PX for a duration of milliseconds.
	cmds.Set(k, "v2").Expire(time.Minute).Do(ctx, c)
	// rdb.SetArgs(ctx, k, "v3", redis.SetArgs{Mode: "XX", Get: true, KeepTTL: true})
	old, err := cmds.Set(k, "v3").XX().Get().KeepTTL().Do(ctx, c)
	fmt.Println(old, err)
	// rdb.SetNX(ctx, k, "v4", time.Minute): false there, cmds.Nil here.
	_, err = cmds.Set(k, "v4").NX().Expire(time.Minute).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))
	// rdb.SetNX(ctx, k, "v4", 0): SETNX, a bool.
	ok, err := cmds.SetNX(k, "v4").Do(ctx, c)
	fmt.Println(ok, err)
	// rdb.SetXX(ctx, k+":ex", "v", 0): false there, cmds.Nil here.
	_, err = cmds.Set(k+":ex", "v").XX().Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))
	// rdb.SetEx(ctx, k+":ex", "v", time.Minute): the duration before the value.
	_, err = cmds.SetEx(k+":ex", time.Minute, "v").Do(ctx, c)
	fmt.Println(err)
	// rdb.Set(ctx, k, "v", redis.KeepTTL) is Set(k, "v").KeepTTL(); an ExpireAt(t)
	// sends EXAT, or PXAT for a time of milliseconds.
	cmds.Set(k+":ex", "v").ExpireAt(time.Now().Add(time.Hour)).Do(ctx, c)

	old, _ = cmds.GetSet(k, "v5").Do(ctx, c) // rdb.GetSet(ctx, k, "v5")
	fmt.Println(old)
	v, _ = cmds.GetEx(k).Expire(time.Hour).Do(ctx, c) // rdb.GetEx(ctx, k, time.Hour)
	fmt.Println(v)
	v, _ = cmds.GetEx(k).Persist().Do(ctx, c) // rdb.GetEx(ctx, k, 0)
	fmt.Println(v)
	n, _ := cmds.SetRange(k, 1, "X").Do(ctx, c) // rdb.SetRange(ctx, k, 1, "X")
	fmt.Println(n)
	v, _ = cmds.GetRange(k, 0, 1).Do(ctx, c) // rdb.GetRange(ctx, k, 0, 1)
	fmt.Println(v)
	n, _ = cmds.StrLen(k).Do(ctx, c) // rdb.StrLen(ctx, k)
	fmt.Println(n)
	v, _ = cmds.GetDel(k).Do(ctx, c) // rdb.GetDel(ctx, k)
	fmt.Println(v)
	_, err = cmds.GetDel(k).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))
	// Output:
	// <nil>
	// v1 <nil>
	// true
	// v2 <nil>
	// true
	// false <nil>
	// true
	// <nil>
	// v3
	// v5
	// v5
	// 2
	// vX
	// 2
	// vX
	// true
}

// Counters and multi-key strings: Incr, IncrBy, IncrByFloat, Decr, DecrBy, Append,
// MSet, MSetNX, MGet.
func Example_fromGoRedisCounters() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:counter"
	cmds.Del(k, k+":f", k+":log", k+":a", k+":b").Do(ctx, c)

	n, _ := cmds.Incr(k).Do(ctx, c) // rdb.Incr(ctx, k).Result()
	fmt.Println(n)
	n, _ = cmds.IncrBy(k, 10).Do(ctx, c) // rdb.IncrBy(ctx, k, 10)
	fmt.Println(n)
	n, _ = cmds.Decr(k).Do(ctx, c) // rdb.Decr(ctx, k)
	fmt.Println(n)
	n, _ = cmds.DecrBy(k, 5).Do(ctx, c) // rdb.DecrBy(ctx, k, 5)
	fmt.Println(n)
	f, _ := cmds.IncrByFloat(k+":f", 0.5).Do(ctx, c) // rdb.IncrByFloat(ctx, k+":f", 0.5)
	fmt.Println(f)
	n, _ = cmds.Append(k+":log", "ab").Do(ctx, c) // rdb.Append(ctx, k+":log", "ab")
	fmt.Println(n)

	// rdb.MSet(ctx, "a", 1, "b", 2) or a map: the pairs are KeyValues.
	cmds.MSet(cmds.KeyValue{Key: k + ":a", Value: 1}, cmds.KeyValue{Key: k + ":b", Value: 2}).Do(ctx, c)
	// rdb.MSetNX(ctx, ...): false, since one of the keys exists.
	ok, _ := cmds.MSetNX(cmds.KeyValue{Key: k + ":a", Value: 3}, cmds.KeyValue{Key: k + ":c", Value: 3}).Do(ctx, c)
	fmt.Println(ok)
	// rdb.MGet(ctx, keys...): []any with nil for a missing key there, []Null[string]
	// here.
	vs, _ := cmds.MGet(k+":a", k+":c", k+":b").Do(ctx, c)
	fmt.Println(vs)
	// Output:
	// 1
	// 11
	// 10
	// 5
	// 0.5
	// 2
	// false
	// [{1 true} { false} {2 true}]
}

// Hashes: HSet, HSetNX, HGet, HMGet, HGetAll, HDel, HIncrBy, HIncrByFloat, HExists,
// HKeys, HVals, HLen.
func Example_fromGoRedisHashes() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:hash"
	cmds.Del(k).Do(ctx, c)

	// rdb.HSet(ctx, k, "name", "Ann", "visits", 1), or a map or a tagged struct there:
	// FieldValues here (ScanMap reads a struct back).
	n, _ := cmds.HSet(k, cmds.FieldValue{Field: "name", Value: "Ann"}, cmds.FieldValue{Field: "visits", Value: 1}).Do(ctx, c)
	fmt.Println(n)
	ok, _ := cmds.HSetNX(k, "name", "Bob").Do(ctx, c) // rdb.HSetNX(ctx, k, "name", "Bob")
	fmt.Println(ok)
	v, _ := cmds.HGet(k, "name").Do(ctx, c) // rdb.HGet(ctx, k, "name").Result()
	fmt.Println(v)
	_, err := cmds.HGet(k, "email").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))              // redis.Nil for a missing field
	vs, _ := cmds.HMGet(k, "name", "email").Do(ctx, c) // rdb.HMGet: nil there, Valid false here
	fmt.Println(vs)
	n, _ = cmds.HIncrBy(k, "visits", 2).Do(ctx, c) // rdb.HIncrBy(ctx, k, "visits", 2)
	fmt.Println(n)
	f, _ := cmds.HIncrByFloat(k, "balance", 1.5).Do(ctx, c) // rdb.HIncrByFloat(ctx, k, "balance", 1.5)
	fmt.Println(f)
	m, _ := cmds.HGetAll(k).Do(ctx, c) // rdb.HGetAll(ctx, k).Result(): map[string]string in both
	fmt.Println(m)
	ok, _ = cmds.HExists(k, "balance").Do(ctx, c) // rdb.HExists(ctx, k, "balance")
	fmt.Println(ok)
	n, _ = cmds.HDel(k, "balance", "email").Do(ctx, c) // rdb.HDel(ctx, k, "balance", "email")
	fmt.Println(n)
	fields, _ := cmds.HKeys(k).Do(ctx, c) // rdb.HKeys(ctx, k)
	slices.Sort(fields)
	fmt.Println(fields)
	values, _ := cmds.HVals(k).Do(ctx, c) // rdb.HVals(ctx, k)
	slices.Sort(values)
	fmt.Println(values)
	n, _ = cmds.HLen(k).Do(ctx, c) // rdb.HLen(ctx, k)
	fmt.Println(n)
	// Output:
	// 2
	// false
	// Ann
	// true
	// [{Ann true} { false}]
	// 3
	// 1.5
	// map[balance:1.5 name:Ann visits:3]
	// true
	// 1
	// [name visits]
	// [3 Ann]
	// 2
}

// go-redis's Scan of a hash into a struct: rdb.HGetAll(ctx, k).Scan(&u) and
// rdb.HMGet(ctx, k, fields...).Scan(&u).
func Example_fromGoRedisHashScan() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:user:1"
	cmds.HSet(k, cmds.FieldValue{Field: "name", Value: "Ann"}, cmds.FieldValue{Field: "visits", Value: 7},
		cmds.FieldValue{Field: "admin", Value: true}).Do(ctx, c)

	type user struct {
		Name   string `redis:"name"`
		Visits int    `redis:"visits"`
		Admin  bool   `redis:"admin"`
	}
	m, err := cmds.HGetAll(k).Do(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	var all user
	fmt.Println(cmds.ScanMap(m, &all), all)

	fields := []string{"name", "visits"}
	vs, err := cmds.HMGet(k, fields...).Do(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	var some user
	fmt.Println(cmds.ScanFields(fields, vs, &some), some)
	// Output:
	// <nil> {Ann 7 true}
	// <nil> {Ann 7 false}
}

// Lists: LPush, RPush, LRange, LLen, LIndex, LSet, LPop, RPop, LPopCount, RPopCount,
// LMove, LRem, LTrim.
func Example_fromGoRedisLists() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:list"
	cmds.Del(k, k+":done").Do(ctx, c)

	n, _ := cmds.RPush(k, "b", "c", "b").Do(ctx, c) // rdb.RPush(ctx, k, "b", "c", "b")
	fmt.Println(n)
	n, _ = cmds.LPush(k, "a").Do(ctx, c) // rdb.LPush(ctx, k, "a")
	fmt.Println(n)
	all, _ := cmds.LRange(k, 0, -1).Do(ctx, c) // rdb.LRange(ctx, k, 0, -1)
	fmt.Println(all)
	n, _ = cmds.LLen(k).Do(ctx, c) // rdb.LLen(ctx, k)
	fmt.Println(n)
	v, _ := cmds.LIndex(k, 1).Do(ctx, c) // rdb.LIndex(ctx, k, 1)
	fmt.Println(v)
	cmds.LSet(k, 2, "C").Do(ctx, c)        // rdb.LSet(ctx, k, 2, "C")
	n, _ = cmds.LRem(k, 0, "b").Do(ctx, c) // rdb.LRem(ctx, k, 0, "b")
	fmt.Println(n)
	// rdb.LMove(ctx, k, k+":done", "LEFT", "RIGHT"): the ends are constants.
	v, _ = cmds.LMove(k, k+":done", cmds.Left, cmds.Right).Do(ctx, c)
	fmt.Println(v)
	cmds.RPush(k, "d", "e", "f", "g").Do(ctx, c)
	cmds.LTrim(k, 0, 3).Do(ctx, c) // rdb.LTrim(ctx, k, 0, 3)
	v, _ = cmds.LPop(k).Do(ctx, c) // rdb.LPop(ctx, k)
	fmt.Println(v)
	v, _ = cmds.RPop(k).Do(ctx, c) // rdb.RPop(ctx, k)
	fmt.Println(v)
	some, _ := cmds.RPopCount(k, 1).Do(ctx, c) // rdb.RPopCount(ctx, k, 1)
	fmt.Println(some)
	some, _ = cmds.LPopCount(k, 5).Do(ctx, c) // rdb.LPopCount(ctx, k, 5)
	fmt.Println(some)
	_, err := cmds.LPop(k).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // an empty list: redis.Nil
	_, err = cmds.LIndex(k, 0).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // out of range: redis.Nil
	// Output:
	// 3
	// 4
	// [a b c b]
	// 4
	// b
	// 2
	// a
	// C
	// f
	// [e]
	// [d]
	// true
	// true
}

// Blocking pops: rdb.BLPop(ctx, timeout, keys...) and rdb.BRPop, the keys first here,
// and rdb.BLMove.
func Example_fromGoRedisBlockingLists() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:jobs"
	cmds.Del(k, k+":done").Do(ctx, c)

	cmds.RPush(k, "job1", "job2").Do(ctx, c)
	kv, err := cmds.BLPop([]string{k}, time.Second).Do(ctx, c) // rdb.BLPop(ctx, time.Second, k)
	fmt.Println(kv, err)
	kv, err = cmds.BRPop([]string{k}, time.Second).Do(ctx, c) // rdb.BRPop(ctx, time.Second, k)
	fmt.Println(kv, err)
	_, err = cmds.BLPop([]string{k}, 10*time.Millisecond).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // timed out: redis.Nil
	cmds.RPush(k, "job3").Do(ctx, c)
	// rdb.BLMove(ctx, k, k+":done", "LEFT", "RIGHT", time.Second)
	v, err := cmds.BLMove(k, k+":done", cmds.Left, cmds.Right, time.Second).Do(ctx, c)
	fmt.Println(v, err)
	// Output:
	// [fromgoredis:jobs job1] <nil>
	// [fromgoredis:jobs job2] <nil>
	// true
	// job3 <nil>
}

// Sets: SAdd, SRem, SMembers, SIsMember, SMIsMember, SCard, SInter, SUnion, SDiff,
// SRandMember, SPop.
func Example_fromGoRedisSets() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:set"
	cmds.Del(k+":a", k+":b", k+":one").Do(ctx, c)

	n, _ := cmds.SAdd(k+":a", "x", "y", "z").Do(ctx, c) // rdb.SAdd(ctx, k+":a", "x", "y", "z")
	fmt.Println(n)
	cmds.SAdd(k+":b", "y", "z", "w").Do(ctx, c)
	n, _ = cmds.SRem(k+":a", "z").Do(ctx, c) // rdb.SRem(ctx, k+":a", "z")
	fmt.Println(n)
	members, _ := cmds.SMembers(k+":a").Do(ctx, c) // rdb.SMembers(ctx, k+":a"): no order
	slices.Sort(members)
	fmt.Println(members)
	ok, _ := cmds.SIsMember(k+":a", "x").Do(ctx, c) // rdb.SIsMember(ctx, k+":a", "x")
	fmt.Println(ok)
	oks, _ := cmds.SMIsMember(k+":a", "x", "w").Do(ctx, c) // rdb.SMIsMember(ctx, k+":a", "x", "w")
	fmt.Println(oks)
	n, _ = cmds.SCard(k+":b").Do(ctx, c) // rdb.SCard(ctx, k+":b")
	fmt.Println(n)
	inter, _ := cmds.SInter(k+":a", k+":b").Do(ctx, c) // rdb.SInter(ctx, k+":a", k+":b")
	fmt.Println(inter)
	union, _ := cmds.SUnion(k+":a", k+":b").Do(ctx, c) // rdb.SUnion(ctx, k+":a", k+":b")
	slices.Sort(union)
	fmt.Println(union)
	diff, _ := cmds.SDiff(k+":b", k+":a").Do(ctx, c) // rdb.SDiff(ctx, k+":b", k+":a")
	slices.Sort(diff)
	fmt.Println(diff)
	cmds.SAdd(k+":one", "only").Do(ctx, c)
	m, _ := cmds.SRandMember(k+":one").Do(ctx, c) // rdb.SRandMember(ctx, k+":one")
	fmt.Println(m)
	m, _ = cmds.SPop(k+":one").Do(ctx, c) // rdb.SPop(ctx, k+":one")
	fmt.Println(m)
	_, err := cmds.SPop(k+":one").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil)) // an empty set: redis.Nil
	// Output:
	// 3
	// 1
	// [x y]
	// true
	// [true false]
	// 3
	// [y]
	// [w x y z]
	// [w z]
	// only
	// only
	// true
}

// Sorted sets, writes and single members: ZAdd (NX, GT), ZIncrBy, ZScore, ZMScore,
// ZRank, ZRevRank, ZCard, ZCount, ZRem, ZRemRangeByScore.
func Example_fromGoRedisSortedSets() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:zset"
	cmds.Del(k).Do(ctx, c)

	// rdb.ZAdd(ctx, k, redis.Z{Score: 3, Member: "ann"}, ...): Member before Score.
	n, _ := cmds.ZAdd(k, cmds.Z{Member: "ann", Score: 3}, cmds.Z{Member: "bob", Score: 5}).Do(ctx, c)
	fmt.Println(n)
	// rdb.ZAddNX(ctx, k, redis.Z{...}), rdb.ZAddArgs(ctx, k, redis.ZAddArgs{GT: true, ...})
	n, _ = cmds.ZAdd(k, cmds.Z{Member: "ann", Score: 100}).NX().Do(ctx, c)
	fmt.Println(n)
	cmds.ZAdd(k, cmds.Z{Member: "bob", Score: 1}).GT().Do(ctx, c)
	f, _ := cmds.ZIncrBy(k, 4, "ann").Do(ctx, c) // rdb.ZIncrBy(ctx, k, 4, "ann")
	fmt.Println(f)
	f, _ = cmds.ZAddIncr(k, cmds.Z{Member: "cid", Score: 0.5}).Do(ctx, c) // rdb.ZAddArgsIncr
	fmt.Println(f)
	_, err := cmds.ZAddIncr(k, cmds.Z{Member: "cid", Score: 1}).NX().Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))   // NX: cid exists, nothing changed
	f, _ = cmds.ZScore(k, "bob").Do(ctx, c) // rdb.ZScore(ctx, k, "bob")
	fmt.Println(f)
	_, err = cmds.ZScore(k, "dan").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))                 // no such member: redis.Nil
	scores, _ := cmds.ZMScore(k, "ann", "dan").Do(ctx, c) // rdb.ZMScore(ctx, k, "ann", "dan")
	fmt.Println(scores)
	r, _ := cmds.ZRank(k, "ann").Do(ctx, c) // rdb.ZRank(ctx, k, "ann")
	fmt.Println(r)
	r, _ = cmds.ZRevRank(k, "ann").Do(ctx, c) // rdb.ZRevRank(ctx, k, "ann")
	fmt.Println(r)
	_, err = cmds.ZRank(k, "dan").Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))
	n, _ = cmds.ZCard(k).Do(ctx, c) // rdb.ZCard(ctx, k)
	fmt.Println(n)
	n, _ = cmds.ZCount(k, "1", "(7").Do(ctx, c) // rdb.ZCount(ctx, k, "1", "(7")
	fmt.Println(n)
	n, _ = cmds.ZRem(k, "cid").Do(ctx, c) // rdb.ZRem(ctx, k, "cid")
	fmt.Println(n)
	n, _ = cmds.ZRemRangeByScore(k, "-inf", "6").Do(ctx, c) // rdb.ZRemRangeByScore(ctx, k, "-inf", "6")
	fmt.Println(n)
	// Output:
	// 2
	// 0
	// 7
	// 0.5
	// true
	// 5
	// true
	// [{7 true} {0 false}]
	// 2
	// 0
	// true
	// 3
	// 1
	// 1
	// 1
}

// Sorted sets, ranges and pops: ZRange, ZRangeWithScores, ZRevRange,
// ZRevRangeWithScores, ZRangeByScore, ZRangeByScoreWithScores, ZRevRangeByScore,
// ZRangeArgs, ZPopMin, ZPopMax.
func Example_fromGoRedisSortedSetRanges() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:board"
	cmds.Del(k).Do(ctx, c)
	cmds.ZAdd(k, cmds.Z{Member: "ann", Score: 1}, cmds.Z{Member: "bob", Score: 2},
		cmds.Z{Member: "cid", Score: 3}, cmds.Z{Member: "dan", Score: 4}).Do(ctx, c)

	// rdb.ZRange(ctx, k, 0, -1): ZRANGE's bounds are strings, as they may be scores.
	ms, _ := cmds.ZRange(k, "0", "-1").Do(ctx, c)
	fmt.Println(ms)
	zs, _ := cmds.ZRangeWithScores(k, "0", "1").Do(ctx, c) // rdb.ZRangeWithScores(ctx, k, 0, 1)
	fmt.Println(zs)
	ms, _ = cmds.ZRevRange(k, 0, 1).Do(ctx, c) // rdb.ZRevRange(ctx, k, 0, 1)
	fmt.Println(ms)
	zs, _ = cmds.ZRevRangeWithScores(k, 0, 0).Do(ctx, c) // rdb.ZRevRangeWithScores(ctx, k, 0, 0)
	fmt.Println(zs)
	// rdb.ZRangeByScore(ctx, k, &redis.ZRangeBy{Min: "(1", Max: "+inf", Offset: 0, Count: 2})
	ms, _ = cmds.ZRangeByScore(k, "(1", "+inf").Limit(0, 2).Do(ctx, c)
	fmt.Println(ms)
	// rdb.ZRangeByScoreWithScores(ctx, k, &redis.ZRangeBy{Min: "3", Max: "4"})
	zs, _ = cmds.ZRangeByScoreWithScores(k, "3", "4").Do(ctx, c)
	fmt.Println(zs)
	// rdb.ZRevRangeByScore(ctx, k, &redis.ZRangeBy{Min: "2", Max: "3"}): the maximum first.
	ms, _ = cmds.ZRevRangeByScore(k, "3", "2").Do(ctx, c)
	fmt.Println(ms)
	// rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: k, Start: 4, Stop: 2, ByScore: true, Rev: true})
	ms, _ = cmds.ZRange(k, "4", "2").ByScore().Rev().Do(ctx, c)
	fmt.Println(ms)
	zs, _ = cmds.ZPopMin(k).Do(ctx, c) // rdb.ZPopMin(ctx, k)
	fmt.Println(zs)
	zs, _ = cmds.ZPopMax(k).Count(2).Do(ctx, c) // rdb.ZPopMax(ctx, k, 2)
	fmt.Println(zs)
	// Output:
	// [ann bob cid dan]
	// [{ann 1} {bob 2}]
	// [dan cid]
	// [{dan 4}]
	// [bob cid]
	// [{cid 3} {dan 4}]
	// [cid bob]
	// [dan cid bob]
	// [{ann 1}]
	// [{dan 4} {cid 3}]
}

// Streams: XAdd, XLen, XRange, XRangeN, XRevRange, XRead, XTrimMaxLenApprox, XDel.
func Example_fromGoRedisStreams() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:stream"
	cmds.Del(k).Do(ctx, c)

	// rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, ID: "1-1", Values: []any{"type", "signup"}})
	id, _ := cmds.XAdd(k, cmds.FieldValue{Field: "type", Value: "signup"}).ID("1-1").Do(ctx, c)
	fmt.Println(id)
	// rdb.XAdd(ctx, &redis.XAddArgs{Stream: k, MaxLen: 1000, Approx: true, Values: ...}):
	// the ID "*" is AutoID(), which is not implied.
	cmds.XAdd(k, cmds.FieldValue{Field: "type", Value: "login"}).AutoID().
		Trim(cmds.XAddMaxLen, "1000").TrimOperator(cmds.XAddApproximately).Do(ctx, c)
	n, _ := cmds.XLen(k).Do(ctx, c) // rdb.XLen(ctx, k)
	fmt.Println(n)
	msgs, _ := cmds.XRange(k, "-", "1-1").Do(ctx, c) // rdb.XRange(ctx, k, "-", "1-1")
	fmt.Println(msgs)
	msgs, _ = cmds.XRange(k, "-", "+").Count(1).Do(ctx, c) // rdb.XRangeN(ctx, k, "-", "+", 1)
	fmt.Println(msgs[0].Values["type"])
	msgs, _ = cmds.XRevRange(k, "+", "-").Count(1).Do(ctx, c) // rdb.XRevRangeN(ctx, k, "+", "-", 1)
	fmt.Println(msgs[0].Values["type"])
	// rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{k, "0"}, Count: 1, Block: -1}):
	// no BLOCK unless Block is called, where go-redis blocks for ever on a zero Block.
	streams, _ := cmds.XRead(cmds.StreamID{Key: k, ID: "0"}).Count(1).Do(ctx, c)
	fmt.Println(streams)
	_, err := cmds.XRead(cmds.StreamID{Key: k, ID: "$"}).Block(10*time.Millisecond).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.Nil))                  // nothing new in time: redis.Nil
	n, _ = cmds.XTrim(k, cmds.XTrimMaxLen, "1").Do(ctx, c) // rdb.XTrimMaxLen(ctx, k, 1)
	fmt.Println(n)
	n, _ = cmds.XDel(k, "1-1").Do(ctx, c) // rdb.XDel(ctx, k, "1-1"): trimmed already
	fmt.Println(n)
	// Output:
	// 1-1
	// 2
	// [{1-1 map[type:signup]}]
	// signup
	// login
	// [{fromgoredis:stream [{1-1 map[type:signup]}]}]
	// true
	// 1
	// 0
}

// Consumer groups: XGroupCreateMkStream, XGroupCreate's BUSYGROUP, XReadGroup,
// XPending, XPendingExt, XAck.
func Example_fromGoRedisConsumerGroups() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:events"
	cmds.Del(k).Do(ctx, c)

	// rdb.XGroupCreateMkStream(ctx, k, "workers", "0")
	_, err := cmds.XGroupCreate(k, "workers").ID("0").MkStream().Do(ctx, c)
	fmt.Println(err)
	// rdb.XGroupCreate(ctx, k, "workers", "$") when the group exists: match the code, not
	// the text "BUSYGROUP".
	_, err = cmds.XGroupCreate(k, "workers").NewID().Do(ctx, c)
	fmt.Println(resp.HasCode(err, "BUSYGROUP"))

	cmds.XAdd(k, cmds.FieldValue{Field: "type", Value: "signup"}).ID("1-1").Do(ctx, c)
	// rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w1",
	// Streams: []string{k, ">"}, Count: 10})
	streams, err := cmds.XReadGroup("workers", "w1", cmds.StreamID{Key: k, ID: ">"}).Count(10).Do(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	msg := streams[0].Messages[0]
	fmt.Println(streams[0].Stream, msg.ID, msg.Values)

	sum, _ := cmds.XPending(k, "workers").Do(ctx, c) // rdb.XPending(ctx, k, "workers")
	fmt.Println(sum.Count, sum.Lower, sum.Higher, sum.Consumers)
	// rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k, Group: "workers", Start: "-",
	// End: "+", Count: 10, Consumer: "w1"})
	pending, _ := cmds.XPendingExt(k, "workers", "-", "+", 10).Consumer("w1").Do(ctx, c)
	fmt.Println(pending[0].ID, pending[0].Consumer, pending[0].RetryCount)
	n, _ := cmds.XAck(k, "workers", msg.ID).Do(ctx, c) // rdb.XAck(ctx, k, "workers", msg.ID)
	fmt.Println(n)
	// Output:
	// <nil>
	// true
	// fromgoredis:events 1-1 map[type:signup]
	// 1 1-1 1-1 map[w1:1]
	// 1-1 w1 1
	// 1
}

// Keys: Del, Unlink, Exists, Expire (NX), PExpire, ExpireAt, TTL, PTTL, Persist, Type,
// Rename, RenameNX.
func Example_fromGoRedisKeys() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:key"
	cmds.Del(k, k+":renamed", k+":other").Do(ctx, c)
	cmds.Set(k, "v").Do(ctx, c)
	cmds.Set(k+":other", "v").Do(ctx, c)

	n, _ := cmds.Exists(k, k+":missing").Do(ctx, c) // rdb.Exists(ctx, k, k+":missing")
	fmt.Println(n)
	ok, _ := cmds.Expire(k, time.Hour).Do(ctx, c) // rdb.Expire(ctx, k, time.Hour)
	fmt.Println(ok)
	ok, _ = cmds.Expire(k, time.Minute).NX().Do(ctx, c) // rdb.ExpireNX(ctx, k, time.Minute)
	fmt.Println(ok)
	// go-redis truncates a duration that is not whole seconds; here it is refused.
	_, err := cmds.Expire(k, 1500*time.Millisecond).Do(ctx, c)
	fmt.Println(errors.Is(err, cmds.ErrInvalidArg))
	// rdb.TTL(ctx, k): a time.Duration there, whole seconds here.
	ttl, _ := cmds.TTL(k).Do(ctx, c)
	fmt.Println(time.Duration(ttl)*time.Second > 59*time.Minute)
	ok, _ = cmds.PExpire(k, 90*time.Second).Do(ctx, c) // rdb.PExpire(ctx, k, 90*time.Second)
	fmt.Println(ok)
	pttl, _ := cmds.PTTL(k).Do(ctx, c) // rdb.PTTL(ctx, k): milliseconds here
	fmt.Println(time.Duration(pttl)*time.Millisecond > time.Minute)
	cmds.ExpireAt(k, time.Now().Add(time.Hour)).Do(ctx, c) // rdb.ExpireAt(ctx, k, t)
	ok, _ = cmds.Persist(k).Do(ctx, c)                     // rdb.Persist(ctx, k)
	fmt.Println(ok)
	ttl, _ = cmds.TTL(k).Do(ctx, c)
	fmt.Println(ttl) // -1: no expiry (go-redis: time.Duration(-1))
	ttl, _ = cmds.TTL(k+":missing").Do(ctx, c)
	fmt.Println(ttl)                // -2: no such key
	t, _ := cmds.Type(k).Do(ctx, c) // rdb.Type(ctx, k)
	fmt.Println(t)
	_, err = cmds.Rename(k, k+":renamed").Do(ctx, c) // rdb.Rename(ctx, k, k+":renamed")
	fmt.Println(err)
	ok, _ = cmds.RenameNX(k+":renamed", k+":other").Do(ctx, c) // rdb.RenameNX
	fmt.Println(ok)
	n, _ = cmds.Del(k+":renamed", k+":missing").Do(ctx, c) // rdb.Del(ctx, keys...)
	fmt.Println(n)
	n, _ = cmds.Unlink(k+":other").Do(ctx, c) // rdb.Unlink(ctx, keys...)
	fmt.Println(n)
	// Output:
	// 1
	// true
	// false
	// true
	// true
	// true
	// true
	// true
	// -1
	// -2
	// string
	// <nil>
	// false
	// 1
	// 1
}

// Scanning: rdb.Scan(ctx, cursor, match, count), rdb.ScanType, rdb.HScan, and the
// iterator loop.
func Example_fromGoRedisScan() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:scan"
	cmds.MSet(cmds.KeyValue{Key: k + ":a", Value: 1}, cmds.KeyValue{Key: k + ":b", Value: 2}).Do(ctx, c)
	cmds.Del(k+":h").Do(ctx, c)
	cmds.HSet(k+":h", cmds.FieldValue{Field: "f", Value: "v"}).Do(ctx, c)

	// keys, cursor, err := rdb.Scan(ctx, cursor, k+":*", 100).Result() until the cursor
	// is 0, or rdb.ScanType(ctx, cursor, k+":*", 100, typ).
	scan := func(typ string) []string {
		var keys []string
		var cursor uint64
		for {
			cmd := cmds.Scan(cursor).Match(k + ":*").Count(100)
			if typ != "" {
				cmd = cmd.Type(typ)
			}
			page, err := cmd.Do(ctx, c)
			if err != nil {
				log.Fatal(err)
			}
			keys = append(keys, page.Elems...)
			if cursor = page.Cursor; cursor == 0 {
				slices.Sort(keys)
				return slices.Compact(keys) // SCAN may return a key twice, as there
			}
		}
	}
	fmt.Println(scan(""))
	fmt.Println(scan("hash"))
	// rdb.HScan(ctx, k+":h", 0, "*", 10): fields and values in turn, as there.
	page, _ := cmds.HScan(k+":h", 0).Count(10).Do(ctx, c)
	fmt.Println(page.Cursor, page.Elems)

	// iter := rdb.Scan(ctx, 0, match, 0).Iterator(): Client.Scan is the whole loop, on
	// every master of a Cluster, with the key prefix.
	seen := map[string]bool{}
	for key, err := range c.Scan(ctx, respire.ScanOptions{Match: k + ":*"}) {
		if err != nil { // iter.Err()
			log.Fatal(err)
		}
		seen[key] = true // iter.Val()
	}
	fmt.Println(len(seen))
	// Output:
	// [fromgoredis:scan:a fromgoredis:scan:b fromgoredis:scan:h]
	// [fromgoredis:scan:h]
	// 0 [f v]
	// 3
}

// Scripting: Eval, EvalSha, EvalRO, ScriptLoad, ScriptExists, redis.NewScript,
// FunctionLoad and FCall.
func Example_fromGoRedisScripting() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:script"
	cmds.Del(k).Do(ctx, c)

	const incr = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
	// rdb.Eval(ctx, src, []string{k}, 5): the reply is a resp.Value, as go-redis's *Cmd.
	v, err := cmds.Eval(incr, []string{k}, 5).Do(ctx, c)
	fmt.Println(v, err)
	// A script returning nil: redis.Nil there, a null Value and no error here.
	v, err = cmds.Eval("return nil", nil).Do(ctx, c)
	fmt.Println(v.IsNull(), err)
	sha, _ := cmds.ScriptLoad(incr).Do(ctx, c)          // rdb.ScriptLoad(ctx, src)
	v, _ = cmds.EvalSha(sha, []string{k}, 1).Do(ctx, c) // rdb.EvalSha(ctx, sha, []string{k}, 1)
	fmt.Println(v.Int())
	known, _ := cmds.ScriptExists(sha).Do(ctx, c) // rdb.ScriptExists(ctx, sha)
	fmt.Println(known)
	v, _ = cmds.EvalRO("return redis.call('GET', KEYS[1])", []string{k}).Do(ctx, c) // rdb.EvalRO
	fmt.Println(v.Text())
	// redis.NewScript(src).Run(ctx, rdb, keys, args...): EVALSHA, and EVAL on NOSCRIPT.
	double := respire.NewScript("return tonumber(ARGV[1]) * 2")
	v, _ = double.Run(ctx, c, nil, 21)
	fmt.Println(v.Int())
	// rdb.FunctionLoadReplace(ctx, code), rdb.FCall(ctx, "fromgoredis_double", nil, 4)
	lib, _ := cmds.FunctionLoad("#!lua name=fromgoredis\n"+
		"redis.register_function('fromgoredis_double', function(keys, args) return args[1] * 2 end)").Replace().Do(ctx, c)
	fmt.Println(lib)
	v, _ = cmds.FCall("fromgoredis_double", nil, 4).Do(ctx, c)
	fmt.Println(v.Int())
	// Output:
	// 5 <nil>
	// true <nil>
	// 6 <nil>
	// [true]
	// 6 <nil>
	// 42 <nil>
	// fromgoredis
	// 8 <nil>
}

// Pub/sub: rdb.Subscribe is Client.Subscribe; rdb.Publish and rdb.PubSubNumSub are
// typed.
func Example_fromGoRedisPubSub() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	ch := "fromgoredis:news"

	// pubsub := rdb.Subscribe(ctx, ch); _, err := pubsub.Receive(ctx): Subscribe
	// returns once the server has confirmed.
	sub, err := c.Subscribe(ctx, ch)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()                               // pubsub.Close()
	n, _ := cmds.Publish(ch, "deployed").Do(ctx, c) // rdb.Publish(ctx, ch, "deployed")
	fmt.Println(n)
	m := <-sub.Messages() // <-pubsub.Channel()
	fmt.Println(m.Channel, m.Payload)
	subs, _ := cmds.PubSubNumSub(ch).Do(ctx, c) // rdb.PubSubNumSub(ctx, ch)
	fmt.Println(subs)
	// SUBSCRIBE as a command would turn a shared connection into a subscriber's.
	_, err = cmds.Subscribe(ch).Do(ctx, c)
	fmt.Println(errors.Is(err, respire.ErrConnState))
	// Output:
	// 1
	// fromgoredis:news deployed
	// map[fromgoredis:news:1]
	// true
}

// Pipelines: rdb.Pipelined(ctx, fn) and pipe := rdb.Pipeline(); ...; pipe.Exec(ctx).
func Example_fromGoRedisPipelined() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:pipe"
	cmds.Del(k).Do(ctx, c)

	p := cmds.NewPipeline(c)                          // pipe := rdb.Pipeline()
	incr := cmds.Incr(k).In(p)                        // incr := pipe.Incr(ctx, k)
	ttl := cmds.Expire(k, time.Hour).In(p)            // pipe.Expire(ctx, k, time.Hour)
	missing := cmds.Get(k + ":missing").In(p)         // pipe.Get(ctx, k+":missing")
	echo := p.Do("ECHO", "any command, typed or not") // pipe.Do(ctx, ...)
	// pipe.Exec(ctx) returns the first command's error, redis.Nil included; this Exec
	// fails only for the batch as a whole, and each Reply has its own error.
	if err := p.Exec(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(incr.Val(), ttl.Val()) // incr.Val()
	n, err := incr.Result()            // incr.Result()
	fmt.Println(n, err)
	fmt.Println(errors.Is(missing.Err(), cmds.Nil)) // missing.Err() == redis.Nil
	fmt.Println(echo.Val())
	// Output:
	// 1 true
	// 1 <nil>
	// true
	// "any command, typed or not"
}

// Transactions: rdb.TxPipelined(ctx, fn) and rdb.TxPipeline(), MULTI/EXEC without
// WATCH.
func Example_fromGoRedisTxPipelined() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:tx"

	var total cmds.Reply[int64]
	err := c.Watch(ctx, func(tx *respire.Tx) error { // no keys: a plain MULTI/EXEC
		p := cmds.NewTxPipeline(tx)
		cmds.Set(k, 10).In(p)           // pipe.Set(ctx, k, 10, 0)
		total = cmds.IncrBy(k, 5).In(p) // pipe.IncrBy(ctx, k, 5)
		return p.Exec(ctx)
	})
	fmt.Println(total.Val(), err)
	// Output: 15 <nil>
}

// Optimistic locking: rdb.Watch(ctx, fn, keys...) with tx.TxPipelined inside and a
// retry on redis.TxFailedErr.
func Example_fromGoRedisWatch() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:stock"
	cmds.Set(k, 3).Do(ctx, c)

	attempts := 0
	for {
		attempts++
		err := c.Watch(ctx, func(tx *respire.Tx) error {
			s, err := cmds.Get(k).Do(ctx, tx) // tx.Get(ctx, k).Int(): reads go through tx
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return err
			}
			if attempts == 1 {
				cmds.Incr(k).Do(ctx, c) // another client's write, between the read and EXEC
			}
			p := cmds.NewTxPipeline(tx) // tx.TxPipelined(ctx, fn)
			cmds.Set(k, n-1).In(p)
			return p.Exec(ctx)
		}, k)
		if errors.Is(err, respire.ErrTxFailed) { // err == redis.TxFailedErr
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	v, _ := cmds.Get(k).Do(ctx, c)
	fmt.Println(v, attempts)
	// Output: 3 2
}

// redis.Nil: errors.Is(err, cmds.Nil) for a single missing value, Null for one element
// of a list, IsNull for Client.Do's reply.
func Example_fromGoRedisNil() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:nil"
	cmds.Del(k).Do(ctx, c)

	_, err := cmds.Get(k).Do(ctx, c) // if err == redis.Nil
	switch {
	case errors.Is(err, cmds.Nil):
		fmt.Println("no such key")
	case err != nil:
		log.Fatal(err)
	}
	vs, _ := cmds.MGet(k).Do(ctx, c) // vs[0] == nil
	fmt.Println(vs[0].Valid)
	v, err := c.Do(ctx, "GET", k) // rdb.Do: redis.Nil there, a null Value here
	fmt.Println(v.IsNull(), err)
	_, err = v.Text() // unless read as a string
	fmt.Println(errors.Is(err, cmds.Nil))
	// Output:
	// no such key
	// false
	// true <nil>
	// true
}

// The escape hatch: rdb.Do(ctx, args...) is Client.Do, for module commands, commands
// newer than the specifications, or a command built at run time.
func Example_fromGoRedisDo() {
	ctx := context.Background()
	c := connect()
	defer c.Close()
	k := "fromgoredis:do"
	cmds.Del(k, k+":h").Do(ctx, c)

	// rdb.Do(ctx, "SET", k, 42).Result(), then rdb.Do(ctx, "INCR", k).Int64()
	if _, err := c.Do(ctx, "SET", k, 42); err != nil {
		log.Fatal(err)
	}
	v, err := c.Do(ctx, "INCR", k)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Int())
	// A typed command's Args, for Client.Do and Client.DoMulti.
	res, err := c.DoMulti(ctx, cmds.IncrBy(k, 10).Args(), cmds.Get(k).Args())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[1].Value.Text())
	// A map reply of Client.Do, a RESP3 map or a RESP2 flat array alike.
	c.Do(ctx, "HSET", k+":h", "name", "Ann")
	all, _ := c.Do(ctx, "HGETALL", k+":h")
	m, err := all.Map()
	name, _ := m["name"].Text()
	fmt.Println(name, err)
	// A server error of either path is a *resp.ServerError: redis.Error's string
	// matching becomes its Code.
	_, err = cmds.LPush(k, "x").Do(ctx, c)
	var se *resp.ServerError
	fmt.Println(errors.As(err, &se) && se.Code == "WRONGTYPE")
	// Output:
	// 43 <nil>
	// 53 <nil>
	// Ann <nil>
	// true
}

// RESP2 and RESP3: go-redis's Protocol option. A typed reply is the same under both;
// the raw reply is not.
func Example_fromGoRedisProtocols() {
	ctx := context.Background()
	k := "fromgoredis:protocols"
	for _, protocol := range []int{2, 3} {
		opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
		if err != nil {
			log.Fatal(err)
		}
		opts.Protocol = protocol // redis.Options{Protocol: 2}
		c, err := respire.NewClient(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		cmds.ZAdd(k, cmds.Z{Member: "ann", Score: 1.5}, cmds.Z{Member: "bob", Score: 2}).Do(ctx, c)
		zs, _ := cmds.ZRangeWithScores(k, "0", "-1").Do(ctx, c)
		raw, _ := c.Do(ctx, "ZRANGE", k, 0, -1, "WITHSCORES")
		fmt.Println(protocol, zs, raw.Len())
		c.Close()
	}
	// Output:
	// 2 [{ann 1.5} {bob 2}] 4
	// 3 [{ann 1.5} {bob 2}] 2
}
