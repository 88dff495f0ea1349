// Package sentinelserver starts a Sentinel-managed Redis deployment for integration
// tests: a master, its replicas and redis-sentinel processes, all real, on free
// loopback ports, each in a temporary directory, stopped when the test ends.
//
// [Start] starts the master, then the replicas (REPLICAOF the master, diskless sync
// without delay so they are in sync at once), then the Sentinels, each from a config
// file of its own ("sentinel monitor <name> 127.0.0.1 <port> <quorum>", a short
// down-after-milliseconds and failover-timeout), and returns once the Sentinels agree:
// every running one names the master, counts every replica and every other Sentinel,
// and every replica's link to the master is up.
//
// Faults are one call each: [Deployment.Failover] (SENTINEL FAILOVER, waiting until
// the Sentinels name a new master that answers ROLE as one), [Deployment.KillMaster]
// (kill -9 of the current master) with [Deployment.WaitNewMaster],
// [Deployment.StopSentinel]/[Deployment.StartSentinel] (kill -9 and restart) and
// [Deployment.PauseSentinel]/[Deployment.ResumeSentinel] (SIGSTOP/SIGCONT: a Sentinel
// that hangs). [StartLoneSentinel] starts a Sentinel outside any deployment, pointed at
// any server (a replica, to get a Sentinel that names a replica as the master).
//
// Like testserver, the package imports nothing from the client under test: it speaks
// to the servers through testserver's own hand-written RESP.
//
// # Concurrency
//
// Accessors that do not take a testing.TB are safe for concurrent use. Methods that
// take one must be called from the test's goroutine, since they stop the test on
// failure. The package starts no goroutine of its own beyond testserver's, which
// end with each process.
package sentinelserver
