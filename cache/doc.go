// Package cache is the store behind client-side caching: replies of read commands kept
// by key, dropped when the server says the key changed.
//
// The client (respire.Client.DoCached) does the talking: it reads through connections
// on which the server tracks keys (RESP3 CLIENT TRACKING ... OPTIN), feeds every
// invalidation push to Invalidate, and calls Flush when such a connection is lost,
// since the pushes it would have carried are lost with it. This package only keeps
// entries, and keeps them honest:
//
//   - A read takes a Ticket (Reserve) before its command is sent, and stores its reply
//     with it (Store). An invalidation or flush that arrives while the read is in
//     flight voids the ticket, and the reply, which may predate the change, is handed
//     to the caller but not kept. A read racing an invalidation never caches the stale
//     value.
//   - Entries expire after the caller's TTL or the key's own, whichever comes first.
//   - The cache is bounded by entries and bytes; going over evicts the least recently
//     used of a small random sample, as Redis does.
//
// # Concurrency
//
// Every method is safe for concurrent use. The cache is split into shards, each under
// its own lock, which the methods that change it take. Get takes no lock and does not
// allocate: it reads an index of lists that writers publish and never change. The only
// memory it writes that other goroutines' hits write too is a striped hit counter and
// a mark of use, once a millisecond.
// The package starts no goroutines.
package cache
