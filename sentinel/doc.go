// Package sentinel finds and follows the master of a Redis deployment managed by Redis
// Sentinel. The respire client uses it when Options.SentinelMaster is set; it can also
// be used on its own with package conn.
//
// Discovery asks the Sentinels in turn (SENTINEL GET-MASTER-ADDR-BY-NAME), the one
// that answered last first, and accepts an address only after a new connection to it
// answers ROLE with "master" (a plain HELLO when an ACL denies ROLE): a Sentinel can be
// out of date or wrong, and a replica must never be written to. Each answer also
// refreshes the list of Sentinels from SENTINEL SENTINELS; configured addresses are
// kept.
//
// Failovers are followed two ways. A Monitor subscribes to +promoted-slave and
// +switch-master on one Sentinel, moving to the next one when that Sentinel fails (and
// looking for the master again after each new subscription, since a switch may have
// happened while none was active), and asks that Sentinel for the master every second
// (which proves it still answers and catches a missed event); an announced address is
// used only once ROLE confirms it. And its user calls Recheck when something suggests the master
// moved: a connection to it failed, it answered READONLY or LOADING, or a new
// connection found it is no longer a master. Either way the Monitor discovers again
// and reports a different master through Config.OnMaster.
//
// What a failover can lose is Redis's, not this package's: replication is
// asynchronous, so writes the old master acknowledged but had not yet sent to the
// promoted replica are gone, and so are writes it accepted after the promotion and
// before it was demoted. A write followed by WAIT n that reported n replicas survives
// a failover to any of those replicas.
//
// # Concurrency
//
// Every method of Monitor is safe for concurrent use. A Monitor owns two goroutines,
// started by Start: one serves rechecks (at most one discovery per 100ms) and calls
// OnMaster and OnReplicas; the other keeps the subscription, on a connection of its
// own (two under RESP2, where a subscribed connection cannot ask anything). Close stops both and waits for them; discoveries and dials in progress are
// cancelled. Role, CheckMaster and CheckReplica run on the caller's goroutine.
package sentinel
