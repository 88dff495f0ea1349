// Package route carries a respire.Client's commands to the servers of one
// deployment. A [Router] is the one seam between the public package and the
// deployment's shape: a standalone server ([NewStandalone]), the master Redis Sentinel
// names, followed across failovers ([NewSentinel]), or the nodes of a Redis Cluster,
// routed by hash slot ([NewCluster]); [New] makes the one a [Deployment] describes.
// The constructors are the only places that look at the kind: each gives the Router
// its implementation (one server at a time, over a standalone or Sentinel backend, or
// a Cluster), and no method of Router branches on it (the calls that carry the
// caller's arguments reach the implementation through a type switch whose cases all
// make the same call; dispatch.go says why). The client asks the router to do
// one call ([Router.Do]: redirections, retries and re-resolution happen inside), to
// send a batch ([Router.DoMulti], with what the client worked out for each command in
// a [Batch], or a [Plan] with [Router.DoPlan]: split by node inside), for dedicated and
// subscription connections by [Target], and for the masters to walk; it hears of
// topology changes through Options.OnSlotMoved, which it sets when it makes the
// router. What the client must know of the deployment it asks by what it means
// ([Router.RoutesByKey], [Router.Standalone]); no code outside this package branches
// on the kind of deployment.
//
// The router never looks a command up: each command comes with its entry in the
// client's table ([Cmd].Info, [Batch].Infos), which knows what COMMAND INFO taught the
// client, and whether a command is read-only (a replica may serve it, a lost one may
// be sent again) is read there, so the client and the router cannot disagree.
//
// Every server is reached through an endpoint: one auto-pipelined connection that all
// callers share ([SharedConn], redialled once however many callers find it broken,
// through a [Dialing]) and one pool of dedicated connections. Errors leave the package
// as its own values (ErrClosed, ErrClusterDown, ErrTooManyRedirects, ErrCrossSlot,
// ErrPerNode, ErrInvalidOptions, which package respire exports under the same names)
// or as conn's: never as pool.ErrClosed, and never as a bare MOVED or ASK.
//
// With an observer in the connections' options (Options.Conn.Observer) the routers
// report each redirection or retry reply they follow, each refresh of a Cluster's slot
// map, each master Sentinel names, and each checkout that waited for a dedicated
// connection. Without one nothing is built.
//
// # Concurrency
//
// A Router and a SharedConn are safe for concurrent use; a Plan belongs to one
// goroutine until DoPlan or Release gives it back. Goroutines: a SharedConn runs one
// dial at a time in a goroutine of its own, stopped and waited for by its Close,
// which also closes its lock lane (a SharedConn of its own, lane.go) if one was made; a
// Cluster router owns a cluster.Refresher (one goroutine), and writes and collects a
// batch that spans several nodes from the caller's goroutine; a Sentinel router owns
// a sentinel.Monitor. Router.Close stops all of them and closes every connection. The
// goroutines of each connection belong to package conn.
package route
