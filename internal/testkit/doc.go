// Package testkit is the one kit the tests of this module share: WaitFor, which polls a
// condition with a deadline instead of sleeping; LogRecorder, which keeps what a
// *slog.Logger is told; and the scripted stand-ins for a Redis server, for logic real
// servers cannot drive deterministically (handshake fallbacks, a reply held back
// mid-batch, a connection dropped at a chosen point, a lease expiring on a fake clock).
// The client constructor is in the subpackage testclient, because the tests of the
// packages the client is built from (conn, pool, route, the root package itself) use
// this kit and cannot import the client.
//
// Server is one scripted connection: a test gets the client end of a transport and a
// *Server at the far end, hands the client end to the code under test (usually through
// a dialer option, see Dialer), and scripts the server: Expect the next command, Reply
// with raw RESP bytes, Close. Over Pipe, the server's reads and writes are synchronous
// with the client's (net.Pipe has no buffer), so a test can hold a command in the
// "being written" state; over TCP, the kernel buffers as it does against a real server.
//
// Nodes serves any number of connections, each command answered by a handler, for
// tests of a client that dials on its own (a pool, a router, a lock's client).
//
// Behaviour users rely on is tested against real servers (test/testserver); this
// package is for the logic around them.
//
// # Concurrency
//
// A Server is driven by one goroutine at a time, usually the test's own or one it
// starts and waits for. Nodes starts one goroutine per connection dialed; Close ends
// them and waits for them. WaitFor and LogRecorder start none. Failures are reported with the
// testing.TB's Errorf, which is safe from any goroutine.
package testkit
