// Package emulator answers as Redis 6.0, Redis 8.4, Valkey 8.1 or Valkey 9.0 in front
// of a real Redis 7 server, for the tests that cannot install those servers.
//
// An [Emulator] is a proxy built on github.com/tidwall/redcon. Every client
// connection gets one backend connection of its own (1:1), authenticated as the client
// authenticates: HELLO, AUTH, SELECT and everything else pass through, so CLIENT ID
// is the backend's and CLIENT KILL ID really kills the connection, after which the
// emulator closes the client connection too. The [Profile] decides what is emulated,
// byte for byte as recorded from the real servers in SERVER-REPLIES.md:
//
//   - SET key value IFEQ v (and on Redis 8.4 IFNE) with NX/XX/GET/EX/PX/EXAT/PXAT/
//     KEEPTTL, with each server's parsing quirks; DELEX on Redis 8.4; DELIFEQ on
//     Valkey 9.0. Commands a profile lacks are forwarded: the backend's
//     unknown-command error is every server's text.
//   - HELLO's server, version and modules fields (the id stays the backend's).
//   - The NOPERM wording of Redis 8 / Valkey ("User lim has no permissions to run
//     the 'incr' command", "No permissions to access a key") and Valkey's
//     "Unknown command called from script".
//   - Redis 6.0 (redis6.go): the backend's errors reworded as 6.x words them
//     (unknown commands in backticks, "Unknown subcommand or wrong number of
//     arguments for", NOPERM "… command or its subcommand"), and what 6.0 lacks
//     refused: CLUSTER SHARDS, CLIENT NO-EVICT, CLIENT PAUSE … WRITE, HELLO without
//     a version. Other commands newer than 6.0 (GETEX, LMOVE, FUNCTION …) still run:
//     only what the client's fallbacks depend on is emulated.
//
// An emulated command runs atomically as a Lua script on the emulator's admin
// connection. Its permission is that of the real command it stands for (SET for
// SET IFEQ, DEL for DELEX and DELIFEQ), checked with ACL DRYRUN, so a user needs no
// EVAL. Before the script runs, a HELLO on the client's own backend connection proves
// that connection alive: a client fenced by CLIENT KILL never gets a delayed command
// executed. The one race left: a kill that reaches the backend within the single
// round trip between that check and the script does not stop the script. Inside
// MULTI the command is queued on the client's own connection as EVAL instead, to run
// in order at EXEC; that needs EVAL, and the client gets an explicit
// "ERR emulator: …" error (and EXECABORT) if the backend refuses it.
//
// Replies are forwarded as their exact bytes; push frames (tracking invalidations,
// RESP3 pub/sub) are forwarded as they arrive, in order with the replies, and the
// invalidations an emulated command causes follow its reply, as on a real server.
// Emulated replies are encoded in the protocol the client negotiated (null is "$-1"
// under RESP2, "_" under RESP3).
//
// In front of a Redis Cluster node, Config.RewriteAddr (or [StartCluster], which puts an
// emulator in front of every node) rewrites node addresses in CLUSTER SHARDS, SLOTS,
// NODES and REPLICAS replies and in MOVED and ASK errors, forwarded or produced by an
// emulated command, so that clients stay on the emulators; an emulated command that
// follows ASKING runs after an ASKING of its own. See cluster.go.
//
// Test hooks: [Emulator.Count] and [Emulator.Commands] observe the commands
// received; [Emulator.Delay], [Emulator.DropConn] and [Emulator.ForceReply] inject
// latency, connection loss and replies; [Emulator.Reset] clears them all.
//
// Simplifications, each a deliberate limit of a test double:
//   - Digest conditions (IFDEQ, IFDNE) and DIGEST are not emulated: SET … IFDEQ and
//     DELEX … IFDEQ on an existing key reply "ERR emulator: … is not emulated";
//     DIGEST is an unknown command. Emulated commands called from inside a Lua script
//     are unknown too, and Redis 8's "ACL failure in script" text is not produced.
//   - Commands run strictly one at a time per connection. In RESP2 subscribed mode
//     replies are forwarded unmatched and emulated commands are refused with an
//     "ERR emulator" error; MONITOR output is forwarded unmatched too, and
//     CLIENT REPLY OFF/SKIP is not supported.
//   - The script runs on another connection, so a tracking client with NOLOOP still
//     gets the invalidation of its own emulated write, and an emulated SET … GET does
//     not make the key tracked (nor consume a CLIENT CACHING yes).
//   - Commands a client pipelines before disconnecting are all run, except after a
//     blocking command (BLPOP, WAIT, XREAD …), which is abandoned with the connection.
//   - Only the names of HELLO's modules were recorded; ver 1, an empty path and no
//     args are this package's. INFO still reports the backend's version.
//
// # Concurrency
//
// All methods of an Emulator are safe for concurrent use. The emulator owns one
// goroutine accepting connections (redcon's Serve) and, per client connection, the
// one redcon starts for it, which ends once the connection's first command has
// detached it, and then three: the session (handles commands in order), its client
// reader (reads and logs commands) and its backend reader (forwards replies and push
// frames). A session ends when the client disconnects or its backend connection
// ends; it then closes both connections and waits for its two readers. The cleanup
// registered by [Start] closes the listener, every connection and the admin
// connection, and returns only after every goroutine has ended, so goleak finds none.
package emulator
