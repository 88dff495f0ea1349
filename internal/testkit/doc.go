// Package fakeserver is a scripted stand-in for a Redis server, for tests of logic that
// real servers cannot drive deterministically (handshake fallbacks, a reply held back
// mid-batch, a connection dropped at a chosen point).
//
// A test gets the client end of a transport and a *Server at the far end, hands the
// client end to the code under test (usually through a dialer option, see Dialer), and
// scripts the server: Expect the next command, Reply with raw RESP bytes, Close.
// Over Pipe, the server's reads and writes are synchronous with the client's (net.Pipe
// has no buffer), so a test can hold a command in the "being written" state; over TCP,
// the kernel buffers as it does against a real server.
//
// Behaviour users rely on is tested against real servers (test/testserver); this
// package is for the logic around them.
//
// # Concurrency
//
// A Server is driven by one goroutine at a time, usually the test's own or one it
// starts and waits for. The package starts no goroutines. Failures are reported with
// the testing.TB's Errorf, which is safe from any goroutine.
package fakeserver
