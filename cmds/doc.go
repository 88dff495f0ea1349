// Package cmds is Respire's typed commands: a constructor for every command and
// subcommand of Redis 8.6 and Valkey 9.1, generated from the servers' own command
// specifications, whose value runs on every path of the core package and returns a
// typed reply.
//
//	n, err := cmds.IncrBy("visits", 5).Do(ctx, client)               // int64
//	s, err := cmds.Set("k", "v").NX().Expire(time.Minute).Do(ctx, client)
//	zs, err := cmds.ZRangeWithScores("board", "0", "-1").Do(ctx, client) // []cmds.Z
//
// The core package stays raw (Client.Do and resp.Value) and knows nothing of this one;
// anything the package has no constructor for (a module's command, a command newer
// than the specifications) is still sent with Client.Do.
//
// # Building a command
//
// A constructor takes the command's required arguments as parameters, named and typed
// as the specification gives them: keys and names as string, the caller's data (values,
// members, elements) as any (a string, []byte or number), integers as int64, doubles as
// float64 (score bounds, which take "-inf" and "(1.5", as string; cursors as uint64),
// lists as a variadic parameter (a count the server wants before a list, such as
// EVAL's numkeys, is computed), repeated groups as a slice of an element type
// (FieldValue, KeyValue, Z, GeoLocation), a choice among keywords as a typed constant
// (Left, Right). Durations and times are time.Duration and time.Time: Expire(d) on SET
// sends EX when d is a whole number of seconds and PX otherwise, and no expiration at
// all for a d of 0, as go-redis's expiration 0 means; ExpireAt(t) sends EXAT or PXAT
// likewise, and a command that takes whole seconds (EXPIRE) refuses a d that is not
// one with ErrInvalidArg rather than rounding it. Arguments the servers take in
// milliseconds are durations too (WAIT's and MIGRATE's timeouts, XCLAIM's IDLE,
// RESTORE's ttl, which with AbsTTL the server reads as a Unix time in milliseconds:
// time.Duration(t.UnixMilli())*time.Millisecond), and HEXPIREAT's time a time.Time. The vector of VADD and VSIM is
// FP32's blob ([]byte) or VALUES' numbers ([]float64 or []float32, sent as their
// count and each number).
//
// Options, blocks and one-of choices are methods of the command's value (SetCmd); the
// value is immutable, each method returning a changed copy, so a command can be built
// once and run many times, and the order of the methods does not matter: the arguments
// are laid out in the specification's order when the command runs. Of a one-of choice
// the last method called wins, and so does the last call of an option: a duration
// that is not a whole number of the unit its argument takes (Set's Expire(1500µs)) fails
// the command with ErrInvalidArg only if it is still there when the command runs, so
// Expire(1500*time.Microsecond).Expire(time.Second) sends EX 1. A required choice
// that was not made (GEOSEARCH's BY..., and its FROM... unless the area is BYPOLYGON)
// fails the command with ErrInvalidArg before anything is sent.
//
// An optional argument inside an option is a method of its own named after the
// option's (XAdd's Trim(XAddMaxLen, "1000") with TrimOperator and TrimLimit,
// GeoSearch's Count with CountAny, BitCount's Range with RangeEnd and RangeUnit),
// sent only with the option. A few nested shapes have no typed form yet (BITFIELD's
// operations, GEOSEARCH's BYPOLYGON, CLIENT KILL's filters, SHUTDOWN's save options,
// SENTINEL CONFIG's, and CLUSTER MIGRATION's, SLOT-STATS' ORDERBY and SYNCSLOTS'
// blocks): their method takes the argument's words as the server takes them, and its
// doc comment says so. XINFO STREAM's FULL, whose reply has another
// shape, is left to Client.Do for now.
//
// # Running it
//
// Do runs a command with a Doer: a *respire.Client (standalone, Cluster or Sentinel,
// with its key prefix, routing and retries) or a *respire.Tx inside Client.Watch.
// Cached runs a read-only command of one key through the client-side cache
// (Client.DoCached). In queues it in a Pipeline (NewPipeline for one round trip,
// NewTxPipeline for a transaction's MULTI/EXEC) and returns a Reply whose Result holds
// the typed reply after the pipeline's Exec; a command that cannot be built as asked
// makes that Exec send nothing and return its ErrInvalidArg. The Reply is a small
// value rather than a pointer, so queuing a command allocates nothing beyond the
// pipeline's own buffer.
// Args returns the arguments, for Client.Do, Client.DoMulti or Pipeline.Do.
//
// Commands that change a connection's state (SELECT, MULTI, EXEC, WATCH, SUBSCRIBE,
// CLIENT REPLY...) have constructors too, and the client refuses them on its shared
// connections as it refuses them through Client.Do (respire.ErrConnState): a
// transaction is Client.Watch with NewTxPipeline, a subscription Client.Subscribe.
//
// # Replies
//
// Each command's reply type comes from its reply schema and is the same under RESP2
// and RESP3: string, int64, float64, bool, []string, map[string]string, and the
// structured forms below. Where the two protocols send different shapes, the decoder
// reads both:
//
//   - members with scores (ZRangeWithScores, ZPopMin...) are []Z; RESP3 sends an
//     array of [member, score] pairs, RESP2 a flat array member, score, ... with the
//     score as a string;
//   - maps (HGETALL, CONFIG GET) are RESP3 maps and RESP2 flat arrays of pairs;
//   - floats (ZSCORE, INCRBYFLOAT) are RESP3 doubles and RESP2 strings;
//   - booleans (SETNX, SISMEMBER, EXPIRE) are integers 0 and 1 in both;
//   - stream entries (XRANGE) are []XMessage, and XREAD and XREADGROUP's streams
//     []XStream: a RESP3 map of stream to entries, a RESP2 array of pairs;
//   - GEOPOS is []Null[GeoPosition], GEOSEARCH []GeoResult whatever its WITH*
//     options (the extra fields are told apart by their kinds);
//   - CLIENT LIST and CLIENT INFO are parsed into ConnectedClient, FUNCTION LIST
//     into []FunctionLibrary (RESP3 maps, RESP2 flat arrays);
//   - SCAN, SSCAN, HSCAN and ZSCAN are a ScanPage: the cursor and the page;
//   - BZPOPMIN is a ZWithKey, LMPOP a KeyValues, ZMPOP a KeyZs; XINFO GROUPS,
//     CONSUMERS and STREAM are XGroupInfo, XConsumerInfo and XStreamInfo (RESP3 maps,
//     RESP2 flat arrays), PUBSUB NUMSUB a map[string]int64;
//   - COMMANDLOG GET is []CommandLogEntry, whose Value is a duration or a size by
//     log, SLOWLOG GET []SlowLogEntry;
//   - ZRANK and ZREVRANK WITHSCORE are a RankScore, LCS IDX an LCSMatches (a RESP3
//     map, a RESP2 flat array; WITHMATCHLEN's lengths are read when present);
//   - of the vector sets, VEMB is []float64 (RESP3 doubles, RESP2 strings) and VEMB
//     RAW a VectorRaw, VINFO a VectorSetInfo (a RESP3 map, a RESP2 flat array, of
//     text and integers), VLINKS a [][]string of neighbours by level, VSIM and
//     VLINKS WITHSCORES []Z and [][]Z (a RESP3 map of element to score, a RESP2 flat
//     array); VSIM's WITHATTRIBS, whose reply has another shape, is left to
//     Client.Do.
//
// A structured decoder never guesses at a reply of another shape: it returns an error
// matching ErrUnexpectedReply (FuzzDecoders feeds them damaged replies).
//
// A command whose reply changes shape with an option has one constructor per shape:
// ZRange returns []string and ZRangeWithScores []Z; LPop returns string and
// LPopCount []string. A command whose reply has no typed form yet returns the
// resp.Value:
//
//   - replies of a varying or nested shape: EVAL, EVALSHA, FCALL and their _RO
//     forms (what the script returns), EXEC (the queued commands' replies), HELLO,
//     ROLE, COMMAND INFO, COMMAND DOCS and COMMAND GETKEYSANDFLAGS, ACL GETUSER and
//     ACL LOG, MEMORY STATS, MODULE LIST, FUNCTION STATS, LATENCY HISTOGRAM, HISTORY
//     and LATEST, CLIENT TRACKINGINFO, DEBUG, PFDEBUG, HOTKEYS GET, GEORADIUS and
//     GEORADIUSBYMEMBER (which may store instead of replying), CLIENT KILL (OK or a
//     count, by form);
//   - cluster and sentinel replies: CLUSTER SHARDS, SLOTS, LINKS, SLOT-STATS,
//     GETSLOTMIGRATIONS and MIGRATION, CLUSTERSCAN, SFLUSH, SENTINEL CONFIG, DEBUG,
//     INFO-CACHE, IS-MASTER-DOWN-BY-ADDR, IS-PRIMARY-DOWN-BY-ADDR, PENDING-SCRIPTS
//     and SIMULATE-FAILURE;
//   - commands the client refuses on its shared connections (SUBSCRIBE and its
//     kin, MONITOR, SYNC, PSYNC), whose replies arrive elsewhere.
//
// ScanMap copies HGetAll's map into a struct by `redis:"name"` field tags, as
// go-redis's Scan does; ScanFields does the same with HMGet's values.
//
// # Missing values
//
// A null reply where a value was asked for (GET of a missing key, SET NX that did not
// set, BLPOP that timed out) is the error Nil, matched with errors.Is(err, cmds.Nil):
// the habit go-redis users have with redis.Nil, and one return shape for every
// command, where a (T, bool, error) form would have given the nullable commands a
// signature of their own and made them differ between a plain call and a pipeline's
// Reply. Nil is resp.ErrNull, the error resp.Value's accessors already return for a
// null, so code mixing both forms tests one error. A list that may hold nulls (MGET,
// HMGET, ZMSCORE) is a []Null[T] instead, since one missing key must not hide the
// others.
//
// # Cost
//
// A command's arguments are laid out on the caller's stack and handed to Client.Do or
// Tx.Do directly, so a typed GET, SET or INCR allocates what Client.Do allocates and
// nothing more beyond its reply's Go value. A command that always sends the same
// arguments (GET, HGET, INCR) hands them over as a slice of their number; one with
// options lays them out in a fixed array of 16. The constructors and option
// methods are small enough to be inlined, which is what keeps the arguments off the
// heap; a command of more than 16 arguments moves them to the heap as copies. In
// queues a command through a method that is not generic, and a pipelined command
// then allocates nothing, from any package: the compiler, calling a generic function
// of another package, assumes it keeps its arguments. A Doer other than
// *respire.Client and *respire.Tx receives copies of the arguments as their text,
// since it may keep them.
//
// # Generation
//
// The *_gen.go files are written by internal/cmdgen from the specifications in
// ../shared/data/command-specs (go generate ./cmds/), each command from Valkey's
// description when both servers describe it alike, else from the fuller one; a
// command only one server has says so in its doc comment. TestGeneratedIsCurrent
// fails when the committed files differ from what the generator writes.
//
// # Concurrency
//
// Command values are immutable and safe for concurrent use. A Pipeline and its Replies
// belong to one goroutine. The package starts no goroutines.
package cmds

//go:generate go run ../internal/cmdgen -specs ../../shared/data/command-specs
