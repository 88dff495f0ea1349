// Package cluster holds what a Redis Cluster client needs to know about slots and
// topology, independently of connections: the hash slot of a key ([Slot], with
// {hash tags}), the layout of a cluster as CLUSTER SHARDS or CLUSTER SLOTS describes it
// ([ParseShards], [ParseSlots]), and a coalescing background refresher ([Refresher]).
//
// The respire client's Cluster router (internal/route, cluster.go and
// cluster_call.go) is built on this package: a slot table that points each of the
// 16384 slots at a node, one auto-pipelined connection and one
// pool of dedicated connections per node, MOVED and ASK redirections followed
// transparently (see the respire package documentation and docs/cluster.md).
// Redirections are parsed by resp.ServerError.Redirect.
//
// # Concurrency
//
// Slot, PrefixedSlot, CRC16, ParseShards and ParseSlots are pure functions. A Topology
// is immutable. A Refresher is safe for concurrent use; it owns one goroutine, started
// by NewRefresher and stopped (and waited for) by Close.
package cluster
