// Package respireotel turns a respire.Client's events (package observe) into
// OpenTelemetry traces and metrics. It is a module of its own, so the library module
// keeps depending on the standard library alone.
//
//	obs, err := respireotel.New() // the global TracerProvider and MeterProvider
//	c, err := respire.NewClient(ctx, respire.Options{Addrs: addrs, Observer: obs})
//	stop, err := obs.ObservePool(c, addrs[0]) // pool usage, read at each collection
//	defer stop()
//
// # Traces
//
// Every command gets a span of kind client named after the command ("GET"), started
// when the client began the call and ended when its reply or failure was known, with
// the attributes of OpenTelemetry's database conventions: db.system.name "redis",
// db.operation.name, server.address and server.port, and db.namespace, the database
// index, when WithDB gives it (the Observer cannot read respire.Options.DB). The span
// starts with the server the command is about to go to (observe.CommandStart.Addr),
// so that a sampler sees it, and ends with the one that replied (after any
// redirection), which replaces it; a command the client cannot place before sending
// (on a Cluster, a keyless one) starts without. A failure sets the span's status to
// Error and error.type to the server's error prefix for an error reply ("WRONGTYPE",
// also in db.response.status_code), or to how the call ended otherwise: "not_sent" (it
// never reached the server) or "unknown" (it may have run); respire.outcome holds
// that class for every span. Only a first word shaped like Redis's prefixes (upper
// case letters, digits and underscores, at most 32) counts as a prefix: a script
// chooses its error reply's first word, which can be a key, so any other is recorded
// as "server_error" with no db.response.status_code, on spans and metrics alike.
//
// Batches get one span each: "PIPELINE" for Pipeline.Exec and DoMulti
// (respire.batch.kind says which), "MULTI" for a transaction, followed, as the
// conventions ask, by the name of the batch's commands when they all share one
// ("PIPELINE GET", "MULTI INCR", from observe.BatchStart.Name), with
// db.operation.batch.size and respire.batch.failed, the commands whose reply was an
// error. The conventions model a batch of one command as a single operation, named
// after it: a Pipeline.Exec or DoMulti of one command gets a span and an operation
// named after the command ("GET", as rueidis names a DoMulti of one), still with
// respire.batch.kind, and without db.operation.batch.size, which the conventions set
// for batches of two or more (or none); a transaction of one INCR is "MULTI INCR". A
// batch's span starts with its server where the client knows it (one server, or a
// transaction bound to its node), not for a Cluster batch, split by node when sent. Lock steps are events on the span current
// in the lock call's context. Spans never carry argument values, keys, server error
// messages (which can quote arguments) or credentials.
//
// # Metrics
//
// Instruments named by the database conventions:
//
//	db.client.operation.duration       histogram, s: commands and batches, by db.operation.name,
//	                                   server.address, server.port, error.type,
//	                                   db.response.status_code and db.namespace (WithDB)
//	db.client.connection.wait_time     histogram, s: checkouts of a dedicated connection that waited
//	db.client.connection.timeouts      counter: such waits that timed out (not those
//	                                   cancelled or ended by a closed pool or client)
//	db.client.connection.create_time   histogram, s: dials with their handshake
//	db.client.connection.count         async up-down counter, by db.client.connection.state
//	                                   (idle, used): ObservePool
//	db.client.connection.pending_requests  async up-down counter: checkouts waiting (ObservePool)
//
// The histograms use the conventions' bucket boundaries (1 ms to 10 s). Respire's own,
// each with a small fixed label set:
//
//	respire.connection.events          dialed, dial_failed, lost, reauth (respire.connection.event)
//	respire.redirects                  moved, ask, tryagain, clusterdown (respire.redirect.kind)
//	respire.cluster.refreshes          changed, unchanged, failed (respire.result)
//	respire.sentinel.failovers         by respire.sentinel.master
//	respire.cache.hits, respire.cache.misses
//	respire.cache.invalidations        keys dropped by invalidation messages
//	respire.cache.flushes              flush, tracking_lost (respire.cache.flush.reason)
//	respire.lock.attempts              tries to take a lock
//	respire.lock.acquisitions          acquired, gave_up (respire.result)
//	respire.lock.contentions           tries that found the lock held
//	respire.lock.wait_time             histogram, s: acquisition waits, by respire.result
//	respire.lock.renewals              ok, failed (respire.result)
//	respire.lock.losses                by respire.lock.loss.cause: lease_lost, ownership_uncertain,
//	                                   lease_expired, other (matched with errors.Is to lock's errors)
//	respire.lock.releases              released, already_released, not_owned, failed
//	                                   (respire.lock.release.outcome)
//	respire.lock.cutoffs               CLIENT KILLs sent by locks: ok, failed (respire.result)
//
// Lock keys are never labels: they are the caller's data, and would make one series
// per key.
//
// # Concurrency
//
// An Observer is safe for concurrent use, as the client requires: its methods are
// called on the goroutines where events happen and return without blocking (they only
// record into the SDK). The package starts no goroutine; ObservePool registers a
// callback that the MeterProvider's reader runs at each collection, until stop.
package respireotel
