// Package link is the narrow seam through which the packages built on a
// respire.Client (lock, coordination) reach what the client does not make public:
// its router, whose lanes carry lock traffic ([route.Router.LaneConn],
// [route.Router.DoOn]) and whose dedicated connections reach the server that carried a
// command; its key prefix; its observer; whether it tracks keys (key watches); and
// whether it serves one server directly. Package respire registers how to find a
// client's link ([Register]) when it is initialised; lock and coordination ask for it
// with [Of], given the *respire.Client their user passed. Data flows one way: lock →
// link → route → conn; nothing in route or conn calls back into respire.
//
// # Concurrency
//
// A Client is made once, with its respire.Client, and never changes: it is safe for
// concurrent use. The package owns no goroutines.
package link
