// Package clusterserver builds real Redis Clusters for integration tests.
//
// [Start] runs one redis-server per node through package testserver (free loopback
// ports, a temporary directory each, killed at the end of the test) with
// cluster-enabled yes, and assembles them as redis-cli --cluster create would, but step
// by step so that every wait is explicit: each node gets a distinct config epoch, the
// masters take even shares of the 16384 slots with CLUSTER ADDSLOTSRANGE, every node
// is introduced with CLUSTER MEET, replicas follow their master with CLUSTER
// REPLICATE, and Start returns once every node reports cluster_state:ok and all nodes
// agree on who serves which slot. The default is three masters with one replica each.
//
// Topology changes, each one call that returns when the cluster has settled:
//
//   - [Cluster.MigrateSlot] moves a slot live: CLUSTER SETSLOT IMPORTING on the
//     target, MIGRATING on the source, MIGRATE ... KEYS in batches until the slot is
//     empty on the source, then SETSLOT NODE on every master. [Cluster.BeginMigration]
//     does the same in steps, so a test can observe the ASK phase.
//   - [Cluster.Failover] promotes a replica with CLUSTER FAILOVER (coordinated, no
//     write lost); [Cluster.KillMaster] kills a master with SIGKILL and waits until its
//     replica has been elected; [Cluster.Restart] brings a killed node back, as a
//     replica of whoever took over its slots; [Cluster.RemoveNode] takes a replica out
//     (CLUSTER FORGET everywhere, CLUSTER RESET on it).
//
// Like testserver, the package imports nothing from the client under test: it talks
// to the nodes with testserver's hand-written RESP.
//
// # Concurrency
//
// The accessors ([Cluster.Nodes], [Cluster.Seeds], [Node.Addr], ...) are safe for
// concurrent use. The methods that take a testing.TB must be called from the test's
// goroutine; they may run while other goroutines send traffic to the cluster, which is
// what they are for. The package starts no goroutines of its own beyond testserver's.
package clusterserver
