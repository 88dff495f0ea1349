// Package route carries a respire.Client's commands to the servers of one
// deployment. A [Router] is the one seam between the public package and the
// deployment's shape: a standalone server ([NewStandalone]), the master Redis Sentinel
// names, followed across failovers ([NewSentinel]), or the nodes of a Redis Cluster,
// routed by hash slot ([NewCluster]). The client asks it to do one call ([Router.Do]:
// redirections, retries and re-resolution happen inside), to send a pipeline
// ([Router.DoPlan]: split by node inside), for dedicated and subscription connections
// by [Target], for the masters to walk, and for notice of topology changes; no code
// outside this package branches on the kind of deployment.
//
// Every server is reached through an endpoint: one auto-pipelined connection that all
// callers share ([SharedConn], redialled once however many callers find it broken)
// and one pool of dedicated connections. Errors leave the package as its own values
// (ErrClosed, ErrClusterDown, ErrTooManyRedirects, ErrCrossSlot, ErrInvalidOptions,
// which package respire exports under the same names) or as conn's: never as
// pool.ErrClosed, and never as a bare MOVED or ASK.
//
// # Concurrency
//
// A Router and a SharedConn are safe for concurrent use; a Plan belongs to one
// goroutine until DoPlan or Release gives it back. Goroutines: a SharedConn runs one
// dial at a time in a goroutine of its own, stopped and waited for by its Close; a
// Cluster router owns a cluster.Refresher (one goroutine) and, while DoPlan sends a
// batch over several nodes, one goroutine per node beyond the first, waited for
// before DoPlan returns; a Sentinel router owns a sentinel.Monitor. Router.Close stops
// all of them and closes every connection. The goroutines of each connection belong
// to package conn.
package route
