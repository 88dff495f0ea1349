package conn

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// authState is what the connection knows of its authentication, under the
// connection's lock: the credentials it last authenticated with, and whether it is
// inside a transaction, where an AUTH must not go.
//
// A transaction is followed, on a connection dialled with Options.Credentials only
// (track), from the commands written one request at a time that expect replies (Do,
// DoMulti): MULTI opens it, EXEC, DISCARD and RESET close it. A request that does
// something to the transaction records what in a record of its own (follow.tx); the
// state is replayed through the requests still written or queued whenever one of them
// turns out not to do it: a request taken back before it was written (its caller gave
// up), whatever the order of several taken back, and a MULTI or DISCARD the server
// refused (settleTx). While a transaction is open, a re-authentication is kept aside
// (deferred) and queued as soon as it ends: right behind an EXEC, once a DISCARD is
// answered as accepted (a refused one closes nothing), or at once when the request that
// opened it is taken back or refused. Every AUTH of a Reauth still queued
// (call.isReauth) that a replay finds inside a transaction is taken back, and its
// Reauth defers it again (reauthTakenBackLocked), whether it was queued behind the end
// of a transaction or at once, behind an EXEC not yet written. So it is never queued by
// the server as part of the caller's transaction and never adds a reply to its EXEC.
// Payloads sent already encoded (DoEncoded, StartEncoded) are not looked into: a
// transaction must not be left open across one.
type authState struct {
	track   bool        // transactions and authentications are followed (Options.Credentials)
	current Credentials // the last successful authentication; zero when unknown
	// inTx: the requests queued so far leave a transaction open, as a request queued
	// now finds it. replied: those answered so far do. The effects of the requests
	// written and queued in between lead from replied to inTx.
	inTx    bool
	replied bool

	deferred    *call  // a Reauth waiting for the transaction to end
	deferredCmd []byte // its encoded AUTH

	// Reauths are numbered as they first take the lock, so that one whose AUTH a
	// take-back sends again never goes behind a later one: it yields to it instead
	// (newerReauthLocked).
	started uint64       // the number of the latest Reauth
	applied uint64       // the number of the latest Reauth the server took
	live    []liveReauth // the Reauths that have not returned, oldest first

	// epoch counts the caller's own AUTHs, HELLOs and RESETs as they are queued: a
	// Reauth's +OK read after one of them queued behind its AUTH records nothing, the
	// authentication staying unknown (reauthRepliedLocked).
	epoch uint32
}

// liveReauth is a Reauth that has not returned yet.
type liveReauth struct {
	seq uint64
	ctx context.Context
}

// errReauthSuperseded is the cause for a deferred Reauth that a later one replaced.
var errReauthSuperseded = errors.New("conn: re-authentication superseded by a later one")

// errReauthTakenBack is the cause for a Reauth whose AUTH was queued and then taken
// back because it would have landed inside a transaction (a request before it was
// taken back): reauth queues or defers it again, so it never reaches the caller.
var errReauthTakenBack = errors.New("conn: re-authentication taken back from inside a transaction")

// errAuthQueued is the cause when AUTH was answered QUEUED: it landed in a transaction
// the connection did not see open (an encoded payload's).
var errAuthQueued = errors.New("conn: AUTH was queued in a transaction")

// Reauth authenticates the connection again, as cr's user (AUTH user password), for
// credentials that are rotated while connections live. The AUTH goes through the
// connection's pipeline, in order with the commands already queued: every command
// queued before it runs as the old user, every one after as the new. Inside a
// transaction opened with MULTI on this connection the AUTH waits until EXEC is queued
// and goes right behind it, or until a DISCARD is accepted (the server may refuse it,
// and the transaction stays open), so Reauth then returns only once the transaction
// has ended (or ctx has); it goes at once when the MULTI turns out not to open one (its
// caller gave up before it was written, or the server refused it).
//
// Transactions are followed only on a connection dialled with Options.Credentials (so
// that others pay nothing for it): on another, a Reauth inside a transaction is queued
// by the server, and the connection is closed.
//
// A RESP2 connection in pub/sub mode cannot be re-authenticated (the server refuses
// AUTH there): Reauth returns ErrReauthPubSub and sends nothing. A RESP3 subscription
// connection can. Errors are as Do's; a refusal is the server's error reply (WRONGPASS),
// after which the connection stays authenticated as before. With Options.Observer set
// each Reauth is reported (observe.ConnReauth), with Err for a refusal or a failure,
// except those where the server refused nothing (ErrReauthPubSub, a closed or broken
// connection, a cancelled ctx: see reauthReport).
func (c *Conn) Reauth(ctx context.Context, cr Credentials) error {
	if c.obs == nil {
		return c.reauth(ctx, cr)
	}
	start := time.Now()
	err := c.reauth(ctx, cr)
	if report, e := c.reauthReport(err); report {
		c.obs.Conn(observe.Conn{Kind: observe.ConnReauth, Addr: c.ident.addr, Duration: time.Since(start), Err: e})
	}
	return err
}

// reauthReport says whether a Reauth that ended with err is told to the observer, and
// with what error. A success is, and so is a refusal or a real failure (a timeout, an
// AUTH landing in a transaction), with its error. The endings where the server refused
// nothing are not: a RESP2 subscription that cannot be re-authenticated, a connection
// closed or broken (reported as lost), a Reauth superseded by a later one, or one
// cancelled by its caller.
func (c *Conn) reauthReport(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrReauthPubSub), errors.Is(err, ErrClosed), errors.Is(err, context.Canceled),
		errors.Is(err, errReauthSuperseded):
		return false, nil
	case errors.Is(err, errAuthQueued):
		return true, err
	}
	if _, refused := resp.AsServerError(err); refused {
		return true, err
	}
	return c.Err() == nil, err
}

// AuthenticatedWith reports whether the connection's last successful authentication,
// at its handshake or by Reauth, was with cr's username and password: whether a
// rotation to cr still has to re-authenticate it. An AUTH or RESET sent by a caller
// makes it unknown (false).
func (c *Conn) AuthenticatedWith(cr Credentials) bool {
	c.mu.Lock()
	cur := c.auth.current
	c.mu.Unlock()
	return cur.Password != "" && username(cur) == username(cr) &&
		subtle.ConstantTimeCompare([]byte(cur.Password), []byte(cr.Password)) == 1
}

func (c *Conn) reauth(ctx context.Context, cr Credentials) error {
	if cr.Password == "" {
		return fmt.Errorf("%w: re-authentication without a password", ErrInvalidOptions)
	}
	var seq uint64 // numbered as it first takes the lock
	// Deferred, so that no way out, a panic included, leaves it counted as live.
	defer func() { c.endReauth(seq) }()
	for {
		// A take-back leaves the AUTH as it was before it was queued: it goes again,
		// deferred if the transaction it would have landed in is still open.
		if err := c.reauthOnce(ctx, &cr, &seq); !errors.Is(err, errReauthTakenBack) {
			return err
		}
	}
}

// reauthOnce queues or defers one AUTH as *cr and waits for its reply. *seq is the
// Reauth's number, 0 before its first attempt took the lock.
func (c *Conn) reauthOnce(ctx context.Context, cr *Credentials, seq *uint64) error {
	cl := c.getCall(1)
	cl.follow = getFollow()
	cl.follow.tx, cl.follow.authCred = txReauth, *cr
	if err := c.lockForEnqueue(ctx); err != nil {
		c.putCall(cl)
		return err
	}
	// Checked under the lock: SetPubSubMode comes before the owner's SUBSCRIBE is
	// queued, so an AUTH queued now goes before it.
	if c.r.pubsub2.Load() {
		c.mu.Unlock()
		c.putCall(cl)
		return ErrReauthPubSub
	}
	if *seq == 0 {
		c.auth.started++
		*seq = c.auth.started
		c.auth.live = append(c.auth.live, liveReauth{seq: *seq, ctx: ctx})
	} else if c.newerReauthLocked(*seq) {
		// Going again after a take-back would put it behind a later Reauth.
		c.mu.Unlock()
		c.putCall(cl)
		return &CallError{Err: errReauthSuperseded}
	}
	cl.follow.authSeq = *seq
	if c.auth.inTx {
		return c.waitDeferred(ctx, cl, *cr)
	}
	start := len(c.w.buf)
	c.w.buf, _ = resp.AppendCommand(c.w.buf, "AUTH", username(*cr), cr.Password)
	cl.follow.authEpoch = c.auth.epoch
	c.submitLocked(ctx, cl, start)
	return c.finishReauth(ctx, cl)
}

// endReauth forgets the Reauth numbered seq as it returns (0: it never took the lock).
func (c *Conn) endReauth(seq uint64) {
	if seq == 0 {
		return
	}
	c.mu.Lock()
	c.auth.live = slices.DeleteFunc(c.auth.live, func(r liveReauth) bool { return r.seq == seq })
	c.mu.Unlock()
}

// newerReauthLocked reports whether a Reauth later than the one numbered seq is, or
// may be, the connection's authentication: the server took it already, its AUTH was
// written and is not answered yet (whether its caller still waits or not), or it has
// not returned and its context has not ended. One whose context ended before its AUTH
// was written sends nothing, and must not make a live one give up.
func (c *Conn) newerReauthLocked(seq uint64) bool {
	if c.auth.applied > seq {
		return true
	}
	for _, r := range c.auth.live {
		if r.seq > seq && r.ctx.Err() == nil {
			return true
		}
	}
	written := false
	c.r.inflight.each(func(cl *call) { written = written || (cl.isReauth() && cl.follow.authSeq > seq) })
	return written
}

// waitDeferred keeps cl's AUTH aside until the transaction ends, then waits for its
// reply. It is called with the lock held and unlocks it. A Reauth deferred already is
// an earlier one (a later live one would have made cl's give up in reauthOnce), or
// one whose context ended: cl's replaces it.
func (c *Conn) waitDeferred(ctx context.Context, cl *call, cr Credentials) error {
	if old := c.auth.deferred; old != nil {
		old.fail(&CallError{Err: errReauthSuperseded})
		old.done <- struct{}{}
	}
	cl.state = stateQueued
	c.auth.deferred = cl
	c.auth.deferredCmd, _ = resp.AppendCommand(c.auth.deferredCmd[:0], "AUTH", username(cr), cr.Password)
	c.mu.Unlock()
	select {
	case <-cl.done:
		// Answered behind the transaction's end, or superseded.
		return c.reauthResult(cl)
	case <-c.dead:
	case <-ctx.Done():
	}
	c.mu.Lock()
	if c.auth.deferred == cl {
		c.auth.deferred = nil
		c.mu.Unlock()
		c.putCall(cl)
		if err := ctx.Err(); err != nil {
			return &CallError{Err: context.Cause(ctx)}
		}
		return &CallError{Err: c.Err()}
	}
	c.mu.Unlock()
	// Queued behind the transaction's end meanwhile, or failed with the connection.
	return c.finishReauth(ctx, cl)
}

// finishReauth waits for the AUTH of cl and reports its outcome.
func (c *Conn) finishReauth(ctx context.Context, cl *call) error {
	if err := c.wait(ctx, cl); err != nil {
		return err
	}
	return c.reauthResult(cl)
}

// reauthResult reads the outcome of cl, an AUTH that completed, and recycles cl. The
// reader recorded the credentials already if the server took them (reauthRepliedLocked).
func (c *Conn) reauthResult(cl *call) error {
	v, err := cl.reply, cl.err
	c.putCall(cl)
	if err != nil {
		return err
	}
	if err := v.Err(); err != nil {
		return err
	}
	if text, _ := v.Text(); text == "QUEUED" {
		// The caller's EXEC will carry an extra reply; the connection cannot be
		// trusted to be in the state its user thinks.
		c.fatal(errAuthQueued)
		return &CallError{Written: true, Err: errAuthQueued}
	}
	return nil
}

// reauthRepliedLocked records what the reply to cl, a Reauth's AUTH, says of the
// connection's authentication, as the reader delivers it: replies come in wire order,
// so the last AUTH the server took is the one recorded, whatever order the Reauths'
// callers run in, and whether they still wait. An error reply (a refusal) or QUEUED
// (the AUTH landed in a transaction, reauthResult) changes nothing. Nor does an +OK
// read after a caller's own AUTH, HELLO or RESET was queued behind the AUTH (the epoch
// moved): the authentication stays unknown, though the server did take this Reauth.
func (c *Conn) reauthRepliedLocked(cl *call) {
	if cl.refusedAt(0) { // a Reauth's call has one reply, never a batch
		return
	}
	if text, _ := cl.reply.Text(); text == "QUEUED" {
		return
	}
	f := cl.follow
	if f.authEpoch == c.auth.epoch {
		c.auth.current = f.authCred
	}
	c.auth.applied = max(c.auth.applied, f.authSeq)
}

// txVerb is what a command does to a transaction, or to the authentication.
type txVerb uint8

const (
	txNone    txVerb = iota
	txOpen           // MULTI
	txClose          // EXEC
	txDiscard        // DISCARD
	txReset          // RESET: closes a transaction and logs out
	txAuthAny        // AUTH, HELLO: a caller's own authentication, perhaps
)

// verbOf classifies a command by its name. It runs on the path of every command of a
// connection that follows transactions (authState.track), so it looks at the length
// first: most commands are rejected by that alone.
func verbOf(args []any) txVerb {
	if len(args) == 0 {
		return txNone
	}
	if name, ok := args[0].(string); ok {
		if len(name) < 4 || len(name) > 7 {
			return txNone
		}
		return verbOfName(name)
	}
	return verbOfOther(args[0])
}

// verbOfOther is verbOf for a name given as []byte or a named type of a string or
// []byte kind.
func verbOfOther(name any) txVerb {
	if s, ok := argkind.Text(name); ok && len(s) >= 4 && len(s) <= 7 {
		return verbOfName(s)
	}
	return txNone
}

func verbOfName(name string) txVerb {
	switch len(name) {
	case 4:
		switch {
		case asciiEqualFold(name, "EXEC"):
			return txClose
		case asciiEqualFold(name, "AUTH"):
			return txAuthAny
		}
	case 5:
		switch {
		case asciiEqualFold(name, "MULTI"):
			return txOpen
		case asciiEqualFold(name, "RESET"):
			return txReset
		case asciiEqualFold(name, "HELLO"):
			return txAuthAny
		}
	case 7:
		if asciiEqualFold(name, "DISCARD") {
			return txDiscard
		}
	}
	return txNone
}

// asciiEqualFold compares s with the upper-case ASCII word upper, ignoring case.
func asciiEqualFold(s, upper string) bool {
	if len(s) != len(upper) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i]&^0x20 != upper[i] {
			return false
		}
	}
	return true
}

// txEffect is what a request does to the transaction state of its connection.
type txEffect uint8

const (
	txKeeps  txEffect = iota // leaves it as it found it
	txOpens                  // leaves a transaction open: its last transaction command is MULTI
	txCloses                 // leaves none open: its last is EXEC or RESET, or an accepted DISCARD
	// txReauth: a Reauth's AUTH, which leaves it as it found it. Its record says so,
	// and the reader, which hands the reply of every request with a record to
	// repliedAuthLocked, records the authentication (reauthRepliedLocked).
	txReauth
	// txDiscards: its last is a DISCARD not answered yet. A refused DISCARD (the ACL)
	// leaves the transaction open on the server, so until the reply says it was
	// accepted, the request counts as doing what its commands before the DISCARD do
	// (call.txAfter): an AUTH is not queued behind it.
	txDiscards
)

// after is the transaction state behind a request of effect e that found inTx; e is
// not txDiscards (see call.txAfter).
func (e txEffect) after(inTx bool) bool {
	switch e {
	case txOpens:
		return true
	case txCloses:
		return false
	}
	return inTx
}

// txAfter is the transaction state behind cl, a request that found inTx, as far as an
// AUTH queued behind it is concerned.
func (cl *call) txAfter(inTx bool) bool {
	f := cl.follow
	switch {
	case f == nil:
		return inTx
	case f.tx == txDiscards:
		// As if every DISCARD not answered yet is refused: a run of DISCARDs follows
		// a MULTI of the request's, if it has one, and otherwise whatever it found.
		return slices.ContainsFunc(f.txSteps, func(s txStep) bool { return s.open }) || f.txBase.after(inTx)
	}
	return f.tx.after(inTx)
}

// effect is what cl does to a transaction: txKeeps for a request without a record.
func (cl *call) effect() txEffect {
	if cl.follow == nil {
		return txKeeps
	}
	return cl.follow.tx
}

// isReauth reports whether cl is the AUTH of a Reauth.
func (cl *call) isReauth() bool { return cl.follow != nil && cl.follow.tx == txReauth }

// follow is the record of a request that does something to its connection's
// transaction or authentication state: one whose commands include a MULTI, EXEC,
// DISCARD or RESET on a connection that follows transactions (followLocked), or the
// AUTH of a Reauth (reauthOnce). Every other request, the common one, carries none
// (call.follow is nil): following costs it one pointer and no work. Records come from
// a pool as they are needed and go back with their call (putCall).
type follow struct {
	tx      txEffect // what it does to a transaction
	txBase  txEffect // what it does if every one of txSteps is refused
	txSteps []txStep // its MULTIs and DISCARDs since its last EXEC or RESET (settleTx)
	// The AUTH of a Reauth (tx is txReauth), which a replay takes back if it finds
	// it inside a transaction (reauthTakenBackLocked):
	authSeq   uint64      // its Reauth's number (authState.started)
	authCred  Credentials // its credentials, recorded by the reader when the server takes them
	authEpoch uint32      // authState.epoch as it was queued
}

// follows recycles the records. They hold no channel, so unlike calls they may be
// shared by connections in different testing/synctest bubbles.
var follows = sync.Pool{New: func() any { return new(follow) }}

// getFollow takes a record that does nothing yet: txKeeps, no steps.
func getFollow() *follow { return follows.Get().(*follow) }

// putFollow recycles f, keeping the room of its steps but no password.
func putFollow(f *follow) {
	*f = follow{txSteps: f.txSteps[:0]}
	follows.Put(f)
}

// txStep is a MULTI (open) or a DISCARD of a request, at its command at.
type txStep struct {
	at   int
	open bool
}

// followLocked records on cl, for its command i just encoded, of verb v, what it does
// to the transaction; a caller's own AUTH, HELLO or RESET makes the authentication
// unknown. A request that expects no reply (Send) is not followed: a transaction
// command's reply would break the connection anyway.
func (c *Conn) followLocked(cl *call, i int, v txVerb) {
	switch v {
	case txNone:
		return
	case txAuthAny:
		c.auth.current = Credentials{}
		c.auth.epoch++
		return
	case txReset:
		c.auth.current = Credentials{}
		c.auth.epoch++
	}
	if cl.want == 0 {
		return
	}
	f := cl.follow
	if f == nil {
		// The request's first transaction command.
		f = getFollow()
		cl.follow = f
	}
	switch v {
	case txOpen:
		f.txSteps = append(f.txSteps, txStep{at: i, open: true})
		f.tx = txOpens
	case txDiscard:
		f.txSteps = append(f.txSteps, txStep{at: i})
		f.tx = txDiscards
	default:
		// An EXEC or RESET ends the transaction whatever its reply: what came before
		// it no longer matters.
		f.txBase, f.txSteps = txCloses, f.txSteps[:0]
		f.tx = txCloses
	}
}

// queuedAuthLocked is submitLocked's part for the authentication state, once cl is
// queued: the transaction state moves on by cl's effect, and a deferred AUTH whose
// transaction has ended is queued right behind cl.
func (c *Conn) queuedAuthLocked(cl *call) {
	c.auth.inTx = cl.txAfter(c.auth.inTx)
	if c.auth.deferred != nil && !c.auth.inTx {
		c.releaseDeferredLocked()
	}
}

// releaseDeferredLocked queues the deferred AUTH at the end of the queue.
func (c *Conn) releaseDeferredLocked() {
	a := c.auth.deferred
	c.auth.deferred = nil
	a.start = len(c.w.buf)
	a.follow.authEpoch = c.auth.epoch
	c.w.buf = append(c.w.buf, c.auth.deferredCmd...)
	a.end = len(c.w.buf)
	clear(c.auth.deferredCmd)
	c.w.queued = append(c.w.queued, a)
}

// replayTxLocked recomputes the transaction state from replied through the effects of
// the requests written and queued since, after one of them turned out not to have the
// effect it was counted with. Every queued AUTH of a Reauth that would now land inside
// a transaction is taken back (reauthTakenBackLocked); a deferred AUTH whose
// transaction is gone is queued at once, not behind whatever request comes next.
func (c *Conn) replayTxLocked() {
	inTx := c.auth.replied
	c.r.inflight.each(func(cl *call) { inTx = cl.txAfter(inTx) })
	for i := 0; i < len(c.w.queued); {
		cl := c.w.queued[i]
		if cl.isReauth() && inTx {
			c.reauthTakenBackLocked(cl)
			continue // the next request is at i now
		}
		inTx = cl.txAfter(inTx)
		i++
	}
	c.auth.inTx = inTx
	if c.auth.deferred != nil && !inTx {
		c.releaseDeferredLocked()
		if !c.w.writing {
			// Queued outside submitLocked: the writer goroutine takes the role.
			c.w.writing = true
			signal(c.w.wake)
		}
	}
}

// reauthTakenBackLocked takes back a, the AUTH of a Reauth queued that would land
// inside a transaction. Its Reauth goes again (errReauthTakenBack), deferred now,
// unless a later live Reauth supersedes it (newerReauthLocked): going again would put
// it after that one. A waiter that the watcher woke as its context ended has a token
// in done already and is coming for the lock to take its call back itself: a is only
// left out of the queue for it (unqueueLocked then finds nothing).
func (c *Conn) reauthTakenBackLocked(a *call) {
	cause := errReauthTakenBack
	if c.newerReauthLocked(a.follow.authSeq) {
		cause = errReauthSuperseded
	}
	c.unqueueLocked(a)
	if a.ctxEnded {
		return
	}
	a.fail(&CallError{Err: cause})
	a.done <- struct{}{} // never blocks: nobody else signals a queued call's done
}

// unqueueAuthLocked is unqueueLocked's part for the authentication state, once cl is
// out of the queue: when cl would have opened or closed a transaction, the state is
// replayed without it.
func (c *Conn) unqueueAuthLocked(cl *call) {
	if e := cl.effect(); e != txKeeps && e != txReauth {
		c.replayTxLocked()
	}
}

// repliedAuthLocked moves the answered transaction state on by cl's effect, cl being
// a request with a record (one that opened or closed a transaction) that has all its
// replies; when that is not the effect it was counted with, the state is replayed (a
// deferred AUTH may go). A Reauth's AUTH records the authentication instead.
func (c *Conn) repliedAuthLocked(cl *call) {
	if cl.isReauth() {
		c.reauthRepliedLocked(cl)
		return
	}
	counted := cl.follow.tx
	cl.settleTx()
	c.auth.replied = cl.follow.tx.after(c.auth.replied)
	if cl.follow.tx != counted {
		c.replayTxLocked()
	}
}

// settleTx sets cl's effect from its replies: that of its last MULTI or DISCARD the
// server accepted, since its last EXEC or RESET. A MULTI the server refused did not
// open a transaction: refused by the ACL, none is open; nested in one already open,
// that one still is (a top-level MULTI under maxmemory is accepted: only a nested one
// gets -OOM). A DISCARD refused (the ACL, or no transaction open) closed nothing
// either; an accepted one closed the transaction. Either way a refused one does what
// the commands before it did, down to txBase when every one was refused. An EXEC
// refused (-EXECABORT, also for -NOPERM, -READONLY or -OOM) ends the transaction all
// the same.
func (cl *call) settleTx() {
	f := cl.follow
	if f == nil || (f.tx != txOpens && f.tx != txDiscards) {
		return
	}
	for i := len(f.txSteps) - 1; i >= 0; i-- {
		if s := f.txSteps[i]; !cl.refusedAt(s.at) {
			f.tx = txCloses
			if s.open {
				f.tx = txOpens
			}
			return
		}
	}
	f.tx = f.txBase
}

// refusedAt reports whether the reply to cl's command i is an error reply: the
// server refused it.
func (cl *call) refusedAt(i int) bool {
	if cl.results != nil {
		_, refused := resp.AsServerError(cl.results[i].Err)
		return refused
	}
	k := cl.reply.Kind()
	return k == resp.KindError || k == resp.KindBulkError
}
