package respireotel

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Respire's own attribute keys.
const (
	outcomeKey      = attribute.Key("respire.outcome")
	batchKindKey    = attribute.Key("respire.batch.kind")
	batchFailedKey  = attribute.Key("respire.batch.failed")
	resultKey       = attribute.Key("respire.result")
	connEventKey    = attribute.Key("respire.connection.event")
	redirectKindKey = attribute.Key("respire.redirect.kind")
	masterKey       = attribute.Key("respire.sentinel.master")
	flushReasonKey  = attribute.Key("respire.cache.flush.reason")
	lossCauseKey    = attribute.Key("respire.lock.loss.cause")
	releaseKey      = attribute.Key("respire.lock.release.outcome")
	// elapsedKey is, in seconds, how long an acquisition had waited or the lock
	// had been held (observe.Lock.Wait).
	elapsedKey = attribute.Key("respire.lock.elapsed")
)

// poolNameKey is the conventions' db.client.connection.pool.name.
const poolNameKey = attribute.Key("db.client.connection.pool.name")

// Batch operation names: the conventions name a batch "BATCH", or by a term of the
// database's own, followed by the name its commands share when they share one
// ("PIPELINE GET", "MULTI INCR").
const (
	pipelineName    = "PIPELINE"
	transactionName = "MULTI"
)

// batchKey names a batch operation whose commands share a name: a transaction or a
// pipeline (DoMulti too), and that name.
type batchKey struct {
	tx   bool
	name string
}

// batchName is the operation name of a batch of kind k and n commands whose events
// carry name (observe.BatchStart.Name, the name its commands share): a pipeline of
// one command is that one operation, named after it; otherwise the kind's term,
// followed by the shared name if there is one. Names with a shared command are made
// once (o.batchNames), so that naming a batch does not allocate.
func (o *Observer) batchName(k observe.BatchKind, n int, name string) string {
	tx := k == observe.Transaction
	switch {
	case name == "" && tx:
		return transactionName
	case name == "":
		return pipelineName
	case n == 1 && !tx:
		return name
	}
	return o.batchNames.get(batchKey{tx: tx, name: name})
}

// joinBatchName makes the name of a batch whose commands share k.name.
func joinBatchName(k batchKey) string {
	if k.tx {
		return transactionName + " " + k.name
	}
	return pipelineName + " " + k.name
}

// serverAttrs returns server.address and server.port for a "host:port" address, or
// nothing for "" (no server reached).
func serverAttrs(addr string) []attribute.KeyValue {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []attribute.KeyValue{semconv.ServerAddress(addr)}
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return []attribute.KeyValue{semconv.ServerAddress(host)}
	}
	return []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(p)}
}

// failure is what a failed command or batch records: error.type, and the server's
// error prefix (db.response.status_code) for an error reply. The prefix is a word the
// server chose ("WRONGTYPE", "NOPERM"), never the message, which can quote arguments.
type failure struct {
	errType    string
	statusCode string
}

// classify names a failure by its outcome class, or by the error reply's prefix when
// that looks like one. Any error reply's first word reaches ServerError.Code, and a
// script picks its own (redis.error_reply(KEYS[1] .. " not found") puts a key there),
// so a word that is not shaped like Redis's prefixes is data: it becomes
// "server_error" with no status code, which keeps the span and metric labels bounded.
func classify(o observe.Outcome, err error) failure {
	switch o {
	case observe.OK:
		return failure{}
	case observe.ServerError:
		if se, ok := resp.AsServerError(err); ok && isErrorPrefix(se.Code) {
			return failure{errType: se.Code, statusCode: se.Code}
		}
	}
	return failure{errType: o.String()}
}

// maxPrefixLen bounds an error prefix: Redis's longest ("NOREPLICAS",
// "MASTERDOWN", "UNBLOCKED") are far shorter.
const maxPrefixLen = 32

// isErrorPrefix reports whether code matches ^[A-Z][A-Z0-9_]{0,31}$, the shape of
// every prefix Redis and its modules send.
func isErrorPrefix(code string) bool {
	if code == "" || len(code) > maxPrefixLen || code[0] < 'A' || code[0] > 'Z' {
		return false
	}
	for i := 1; i < len(code); i++ {
		c := code[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func (f failure) attrs() []attribute.KeyValue {
	var kv []attribute.KeyValue
	if f.errType != "" {
		kv = append(kv, semconv.ErrorTypeKey.String(f.errType))
	}
	if f.statusCode != "" {
		kv = append(kv, semconv.DBResponseStatusCode(f.statusCode))
	}
	return kv
}

// Lock loss causes: lock's exported errors, matched with errors.Is, and "other".
const (
	causeLeaseLost   = "lease_lost"
	causeUncertain   = "ownership_uncertain"
	causeExpired     = "lease_expired"
	causeOtherReason = "other"
)

// lossCause maps the cause of a lost lock (observe.Lock.Err of a LockLost) to its
// label. Package lock reports ErrLeaseLost, ErrOwnershipUncertain, ErrLeaseExpired
// (also when a keep-alive's timer finds the lease over) or a renewal's own error,
// which is "other". context.DeadlineExceeded is not among them: it is how a
// KeepAliveContext without a keep-alive ends at expiry, which reports no loss.
func lossCause(err error) string {
	switch {
	case errors.Is(err, lock.ErrLeaseLost):
		return causeLeaseLost
	case errors.Is(err, lock.ErrOwnershipUncertain):
		return causeUncertain
	case errors.Is(err, lock.ErrLeaseExpired):
		return causeExpired
	}
	return causeOtherReason
}

// opKey names a cached attribute set: one command or batch name on one server.
type opKey struct{ name, addr string }

// opAttrs are the attributes of successful operations of one opKey, ready for the
// metric and the span: built once, since a command's attributes are the same every
// time it succeeds on the same server.
type opAttrs struct {
	record []metric.RecordOption
	server []attribute.KeyValue
}

// opBase returns a new slice, with room for more, of the attributes every operation
// named name carries: db.system.name, db.namespace (WithDB) and db.operation.name.
func (o *Observer) opBase(name string, more int) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, len(o.system)+1+more)
	kv = append(kv, o.system...)
	return append(kv, semconv.DBOperationName(name))
}

func (o *Observer) newOpAttrs(k opKey) *opAttrs {
	server := serverAttrs(k.addr)
	kv := append(o.opBase(k.name, len(server)), server...)
	return &opAttrs{
		record: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))},
		server: server,
	}
}

// maxCached bounds each cache: past it (thousands of distinct command names or
// servers), values are built for each call instead.
const maxCached = 1024

// memo keeps values that are the same for every call with one key, built by make on
// first use. It is copy-on-write: readers load the map without a lock, writers (the
// first call with each key) copy it.
type memo[K comparable, V any] struct {
	make func(K) V
	mu   sync.Mutex
	m    atomic.Pointer[map[K]V]
}

func (c *memo[K, V]) get(k K) V {
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	v := c.make(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	old = c.m.Load()
	n := 0
	if old != nil {
		n = len(*old)
	}
	if n >= maxCached {
		return v
	}
	next := make(map[K]V, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = v
	c.m.Store(&next)
	return v
}
