// Package faultproxy is a TCP proxy for loopback tests that injects network
// faults between a client and a server while traffic flows: latency,
// blackhole (accept, never answer), reset (RST), half-close, a bandwidth
// limit, a cut after N bytes, and pause/resume, each for one direction or
// both.
//
//	p := faultproxy.Start(t, srv.Addr())
//	client := connectTo(p.Addr())
//	p.SetLatency(faultproxy.ToClient, 50*time.Millisecond)
//	p.Blackhole(faultproxy.Both) // the server never hears, the client never hears back
//	p.Heal()
//
// A fault set on the proxy applies at once to every connection it carries
// and to the ones it accepts later, until changed or healed. Blackholed bytes
// are read and dropped (the sender's writes keep succeeding, as with a lost
// route); paused bytes are held back, with the socket left unread so TCP's
// own flow control pushes back, and delivered on Resume. ResetAll and a cut
// abort both sockets of a connection with SO_LINGER 0, so each end sees a
// reset, not a clean close.
//
// # Concurrency
//
// Every method is safe for concurrent use. The proxy owns one goroutine that
// accepts and, per connection, three per direction at most (reader, writer)
// — all of which Close stops and waits for; Start registers Close as a test
// cleanup.
package faultproxy
