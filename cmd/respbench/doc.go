// Command respbench measures Respire side by side with the Redis clients and lock
// libraries Go teams use today, in one run on the user's machine. `make bench` runs it.
//
//	cd cmd/respbench && go run . [-addr host:port] [-cluster] [-duration 3s] [-warmup 500ms] [-rounds 3]
//	    [-clients respire,rueidis,...] [-scenarios get-seq,semaphore,redlock,...] [-lock-retry 1ms]
//	    [-json out.json] [-chart out.png|out.svg] [-quick] [-cpuprofile dir] [-trace dir]
//
// Participants, each in its default configuration and in its best documented tuning:
// Respire, Respire's typed commands (respire-typed: package cmds on the same client, in
// the parallel GET and pipeline scenarios),
// Respire observed (respire-observed: a respireotel Observer tracing and
// measuring every command into SDK providers that export nothing, the price of
// observation beside the plain row), its package lock (polling, and woken by tracking invalidations:
// respire-lock-tracking), its fenced locks, semaphore and Redlock group (package
// coordination: respire-fenced, respire-semaphore, respire-redlock); go-redis v9 (its
// pool, and its AutoPipeline blocking face); rueidis (defaults, and MaxFlushDelay
// 20µs); the lock libraries bsm/redislock, redsync over go-redis and over rueidis (one
// pool, and as Redlock over three: redsync-goredis-3, redsync-rueidis-3), and
// rueidislock (defaults, and KeyMajority 1); and redis-benchmark as the server-side
// reference of the data scenarios.
//
// Scenarios: sequential GET (get-seq), parallel GET (get-par), parallel 1 KiB SET
// (set-par), an explicit 100-GET pipeline of one key (pipeline) and of 100 keys spread
// over the slot space, every master's share on a cluster (pipeline-spread), uncontended
// lock acquire+release (lock), 16 goroutines contending for one lock (lock-contended),
// client-side cached GET of a hot key (cached-get: Respire's DoCached against
// go-redis's and rueidis's client-side caches, each checking the value it reads), 16
// goroutines cycling TryAcquire and Release on one semaphore of capacity 4
// (semaphore), and Redlock acquire+release by 16 goroutines on distinct keys over
// three independent servers (redlock).
//
// The semaphore scenario's ops are cycles, whether or not TryAcquire took a permit;
// it also reports acquisitions per second, and its latency is that of the cycles that
// took one. The harness counts the holders between TryAcquire and Release and reports
// the most it saw at once and any acquisition above the capacity, which must be none.
// It has no peer: no Go library offers a Redis semaphore (DistributedLock.Redis, the
// one library with one, is .NET). The redlock scenario runs Respire's RedlockGroup over
// three Respire clients beside redsync over three go-redis and three rueidis pools,
// each making one attempt per acquisition with a 10s TTL, so an acquisition that fails
// on free keys is an error in the report rather than a retry hidden in the latency.
//
// Each runs for a fixed window
// after a warm-up, in interleaved rounds, and the medians of the rounds are reported:
// ops/s, p50/p99/p99.9 latency from a log-bucket histogram fed by every operation,
// allocations and bytes per operation (runtime.MemStats deltas after a GC), the client
// process's CPU per operation (getrusage), and Respire's ratio to the best peer.
// -cpuprofile and -trace record each measured scenario window (not the warm-ups, nor
// -sweep's) to a file per scenario, participant and round (get-par-respire-r1.pprof,
// .trace), so that where the time of a row goes can be read off the windows the table
// reports; recording slows the process, so such a run's figures are not for the README.
//
// Without -addr it starts its own redis-server on a free loopback port, without
// persistence, in a temporary directory, and stops it at the end, on Ctrl-C and on
// SIGTERM too. On a server given with -addr it deletes the keys it wrote when it ends.
// The redlock scenario, whatever -addr and -cluster say, starts three more
// redis-servers of its own the same way (Redlock needs independent standalone servers,
// which neither one server nor a cluster's nodes are) and stops them when it ends.
//
// With -cluster every participant is opened in its cluster mode (Respire with
// Options.Cluster, go-redis's ClusterClient, rueidis as it detects a cluster by itself,
// redis-benchmark --cluster) against the seed nodes -addr lists (comma-separated), or,
// without -addr, a cluster of three masters it starts and assembles itself
// (ADDSLOTSRANGE, MEET) on free loopback ports. The scenarios are the same; a single
// key lives on one node, so the single-key scenarios load one master, as they would
// in production. redis-benchmark --cluster is no usable reference (it measures mostly
// its own start-up and gives up on pipelines), and go-redis's client-side cache is not
// measured on a cluster.
//
// It is its own module, so the peers it measures never enter the library's go.mod.
//
// # Concurrency
//
// Each measured run owns its load goroutines, which stop when the window ends (lock
// waiters through their context) before the next run starts; the progress bar owns one
// redrawing goroutine while the scenarios run; a goroutine reaps each server respbench
// starts (the embedded one, a cluster's nodes, the redlock scenario's three) and ends
// with it. The clients under test keep their own goroutines until they are
// closed at the end.
package main
