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
// A command can also be sent in two halves ([Client.Start], [Client.Finish]), and
// package lock registers the halves of its handles' acquisition and release
// ([LockHalves]) for package coordination, whose Redlock sends to every server before
// it waits for any reply, without adding them to lock's public API.
//
// # Concurrency
//
// A Client is made once, with its respire.Client, and never changes: it is safe for
// concurrent use. The package owns no goroutines.
package link
