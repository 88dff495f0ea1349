package coordination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// RedlockOptions tune a RedlockGroup. The zero value is usable.
type RedlockOptions struct {
	// NodeTimeout bounds each node's part of an acquisition, renewal or release (zero:
	// one second). It is not a bound on the whole call nor on the protected work: give
	// ctx a deadline for that. Keep it well under the TTL, since time spent waiting for
	// a slow node comes out of the lease's validity.
	NodeTimeout time.Duration
	// DriftFactor is the share of the TTL set aside for clock drift between the
	// servers and this process (zero: 0.01). The validity of a lease is
	// ttl − elapsed − (ttl × DriftFactor + 2 ms). It must be in [0, 1).
	DriftFactor float64
}

const (
	defaultNodeTimeout = time.Second
	defaultDriftFactor = 0.01
	// driftFloor is the drift set aside however short the TTL: the servers' expiry
	// runs on millisecond clocks.
	driftFloor = 2 * time.Millisecond
	// redlockCloseTimeout bounds Close's one release.
	redlockCloseTimeout = 5 * time.Second
)

// RedlockGroup takes leases on a majority of independent standalone servers (the
// Redlock algorithm). It does not own its clients: close them after the group's last
// use. It is safe for concurrent use.
type RedlockGroup struct {
	nodes   []*redlockNode
	quorum  int
	timeout time.Duration
	drift   float64
	obs     observe.Observer // the first client's that has one

	mu     sync.Mutex
	broken error // set once two clients proved to reach one server: refused from then on
}

// redlockNode is one vote: a client, its Locker (whose raw-token commands and managed
// handles do the node's work, reporting no events: the group reports the lease's) and
// the server identity the group learned.
type redlockNode struct {
	c     *respire.Client
	locks *lock.Locker

	mu    sync.Mutex
	runID string // "run_id <INFO's run_id>" or a probe's mark; empty until learned
}

// NewRedlockGroup returns a group over clients, which must be an odd number, at least
// three, of distinct standalone clients (neither Cluster nor Sentinel: the endpoints
// of one deployment are not independent votes). It sends nothing. Each server's
// identity is checked the first time the group reaches it, before its vote counts:
// INFO server's run_id, or, where an ACL refuses INFO, a probe key that one client
// writes and the others look for (with a lock's commands and an expiry; deleted
// after). Two clients that reach one server make every later call fail with
// ErrRedlockGroup, and a server that refuses both makes calls fail with
// ErrServerIdentity. All participants must use the same servers, database, key bytes
// and key prefixes. A Redlock reports the steps of its life (observe.Lock), as one
// lease, to the Observer of the first of clients that has one.
func NewRedlockGroup(clients []*respire.Client, opts RedlockOptions) (*RedlockGroup, error) {
	switch n := len(clients); {
	case n < 3:
		return nil, fmt.Errorf("%w: %d clients; a group needs an odd number, at least three", ErrRedlockGroup, n)
	case n%2 == 0:
		// An even group tolerates no more failures than the odd group one smaller, and
		// can split evenly.
		return nil, fmt.Errorf("%w: %d clients; a group needs an odd number", ErrRedlockGroup, n)
	}
	switch {
	case opts.NodeTimeout < 0:
		return nil, fmt.Errorf("%w: negative NodeTimeout %v", ErrInvalidArg, opts.NodeTimeout)
	case !(opts.DriftFactor >= 0 && opts.DriftFactor < 1):
		return nil, fmt.Errorf("%w: DriftFactor %v is not in [0, 1)", ErrInvalidArg, opts.DriftFactor)
	}
	g := &RedlockGroup{quorum: len(clients)/2 + 1, timeout: opts.NodeTimeout, drift: opts.DriftFactor}
	if g.timeout == 0 {
		g.timeout = defaultNodeTimeout
	}
	if g.drift == 0 {
		g.drift = defaultDriftFactor
	}
	seen := make(map[*respire.Client]int, len(clients))
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: client %d is nil", ErrRedlockGroup, i)
		}
		if j, ok := seen[c]; ok {
			return nil, fmt.Errorf("%w: clients %d and %d are the same client", ErrRedlockGroup, j, i)
		}
		seen[c] = i
		ln := link.Of(c)
		if !ln.Standalone {
			return nil, fmt.Errorf("%w: client %d is a Cluster or Sentinel client, one deployment rather than an independent server", ErrRedlockGroup, i)
		}
		g.nodes = append(g.nodes, &redlockNode{c: c, locks: lock.New(c).Unobserved()})
		if g.obs == nil {
			g.obs = ln.Observer
		}
	}
	return g, nil
}

// Size returns the number of servers in the group.
func (g *RedlockGroup) Size() int { return len(g.nodes) }

// Quorum returns how many servers must agree: a majority of the group.
func (g *RedlockGroup) Quorum() int { return g.quorum }

// driftMargin is what a lease of ttl sets aside for clock drift.
func (g *RedlockGroup) driftMargin(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*g.drift) + driftFloor
}

// redlockValidity is the time a lease of ttl can be trusted for after a quorum took it
// in elapsed: what the TTL leaves once the round trips and the drift margin are taken
// out. Not positive means the lease is unusable.
func redlockValidity(ttl, elapsed, margin time.Duration) time.Duration {
	return ttl - elapsed - margin
}

func (g *RedlockGroup) checkLease(key string, ttl time.Duration) error {
	if g == nil || len(g.nodes) == 0 {
		return fmt.Errorf("%w: RedlockGroup without clients (use NewRedlockGroup)", ErrInvalidArg)
	}
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	if _, err := checkTTL(ttl); err != nil {
		return err
	}
	if m := g.driftMargin(ttl); m >= ttl {
		return fmt.Errorf("%w: TTL %v is not above its drift margin %v", ErrInvalidArg, ttl, m)
	}
	return nil
}

// each runs f for every node index in parallel, the last on the calling goroutine and
// the others on goroutines it waits for.
func each(n int, f func(i int)) {
	if n == 0 {
		return
	}
	var wg sync.WaitGroup
	wg.Add(n - 1)
	for i := range n - 1 {
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	f(n - 1)
	wg.Wait()
}

// identify learns the identity of every server not yet identified and refuses the
// group when two clients reach one server. A server that cannot be reached stays
// unidentified and gets no vote this time. errs[i] says why server i was not reached;
// known and errs are nil when every server was identified already.
//
// The identity is INFO server's run_id. Where a server refuses INFO (an ACL such as
// +@all -@dangerous), every reachable server is identified by a probe instead, which
// needs only a lock's own commands (probe); identities of both kinds are never mixed
// in one pass, since a run_id and a probe's mark cannot be compared.
func (g *RedlockGroup) identify(ctx context.Context) (known []bool, errs []error, _ error) {
	g.mu.Lock()
	broken := g.broken
	g.mu.Unlock()
	if broken != nil {
		return nil, nil, broken
	}
	// While any server is still unidentified, every server is asked again: a restart
	// changes a server's run_id, and one learned before it would not match what a
	// client of the same server learns now, letting one server vote twice.
	refresh := false
	for _, n := range g.nodes {
		refresh = refresh || n.id() == ""
	}
	if !refresh {
		// Every server is known and none is asked again: nil says so without a
		// parallel run of nothing, on every acquisition.
		return nil, nil, nil
	}
	errs = g.askIdentities(ctx)
	for _, err := range errs {
		if resp.HasCode(err, "NOPERM") {
			if err := g.probe(ctx, errs); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	known = make([]bool, len(g.nodes))
	byID := map[string]int{}
	for i, n := range g.nodes {
		if errs[i] != nil {
			errs[i] = fmt.Errorf("client %d: %w", i, errs[i])
			continue
		}
		id := n.id()
		if j, ok := byID[id]; ok {
			err := fmt.Errorf("%w: clients %d and %d reach one server (%s)", ErrRedlockGroup, j, i, id)
			g.mu.Lock()
			g.broken = err
			g.mu.Unlock()
			return nil, nil, err
		}
		byID[id] = i
		known[i] = true
	}
	return known, errs, nil
}

// askIdentities asks every server its identity again, in parallel, and returns why
// each could not answer. (Made apart from identify, whose results a closure would
// move to the heap even when nothing is asked.)
func (g *RedlockGroup) askIdentities(ctx context.Context) []error {
	errs := make([]error, len(g.nodes))
	each(len(g.nodes), func(i int) { errs[i] = g.nodes[i].identify(ctx, g.timeout, true) })
	return errs
}

// probeTTL bounds how long a probe's mark can outlive a probe that could not delete it.
const probeTTL = 30 * time.Second

// probe identifies the servers that INFO could not, with the commands a lock needs and
// nothing else. The servers are visited one at a time, each taking one mark key (a
// fresh name) with a token of its own, as a lock would: a server that finds the mark
// taken already is the server of the client whose token it holds. errs holds INFO's
// errors on entry: the servers it could not reach are left out (they get no vote, as
// without the probe), and the probe's own errors replace the others. A server that
// refuses the probe's commands fails the call with ErrServerIdentity.
//
// Two clients of one server that use different databases or key prefixes see
// different marks and are not told apart; INFO's run_id tells them apart, and a group
// needs the same database and prefix on every client anyway.
func (g *RedlockGroup) probe(ctx context.Context, errs []error) error {
	name, err := lock.NewToken().Text()
	if err != nil {
		name = lock.NewToken().String()
	}
	mark := "respire:redlock:identity:" + name
	tokens := make([]lock.Token, len(g.nodes))
	taken := make([]bool, len(g.nodes))
	defer g.dropProbe(mark, tokens, taken)
	for i, n := range g.nodes {
		if errs[i] != nil && !resp.HasCode(errs[i], "NOPERM") {
			continue
		}
		errs[i] = nil
		tokens[i] = lock.NewToken()
		id, err := n.probe(ctx, g.timeout, mark, tokens[i], func(owner lock.Token) (string, bool) {
			for j := range i {
				if taken[j] && tokens[j] == owner {
					return g.nodes[j].id(), true
				}
			}
			return "", false
		})
		if resp.HasCode(err, "NOPERM") {
			return fmt.Errorf("%w: client %d: %w", ErrServerIdentity, i, err)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		taken[i] = id == ""
		if taken[i] {
			id = fmt.Sprintf("the server that took probe mark %s for client %d", mark, i)
		}
		n.mu.Lock()
		n.runID = id
		n.mu.Unlock()
	}
	return nil
}

// dropProbe deletes the marks a probe took, each through the client that took it,
// within one node timeout; a mark it cannot reach expires with probeTTL.
func (g *RedlockGroup) dropProbe(mark string, tokens []lock.Token, taken []bool) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	each(len(g.nodes), func(i int) {
		if taken[i] {
			_, _ = g.nodes[i].locks.Release(ctx, mark, tokens[i])
		}
	})
}

func (n *redlockNode) id() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runID
}

// identify asks the server its run_id, once unless refresh is set. Once every server
// of the group is identified, the identities were learned together and a restart
// since does not matter: they still tell the servers apart.
func (n *redlockNode) identify(ctx context.Context, timeout time.Duration, refresh bool) error {
	if !refresh && n.id() != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := n.c.Do(ctx, "INFO", "server")
	if err != nil {
		return err
	}
	text, err := v.Text()
	if err != nil {
		return err
	}
	for line := range strings.Lines(text) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok && id != "" {
			n.mu.Lock()
			n.runID = "run_id " + id
			n.mu.Unlock()
			return nil
		}
	}
	return fmt.Errorf("%w: INFO server has no run_id", ErrServerIdentity)
}

// probe takes the mark with token. When the mark is taken already, it returns the
// identity of the client whose token holds it (twin finds it); id is "" when this
// client took the mark.
func (n *redlockNode) probe(ctx context.Context, timeout time.Duration, mark string, token lock.Token, twin func(lock.Token) (string, bool)) (id string, _ error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	took, err := n.locks.TryTake(ctx, mark, token, probeTTL)
	if err != nil || took {
		return "", err
	}
	owner, ok, err := n.locks.OwnerToken(ctx, mark)
	if err != nil {
		return "", err
	}
	if id, found := twin(owner); ok && found {
		return id, nil
	}
	// Nobody else writes a fresh name: a mark held by no client of the group is a
	// server that is not behaving as one, and gets no vote.
	return "", fmt.Errorf("%w: probe mark %s held by a token of no client of the group", ErrServerIdentity, mark)
}

// Redlock is a lease held on a quorum of a RedlockGroup's servers: the same key and
// owner token on each, with the same TTL. Finish the protected work within
// RemainingEstimate, renew with ResetExpiry before it ends, or run the work under
// KeepAlive's context; stop when renewal fails. It carries no fencing token. It is
// safe for concurrent use.
type Redlock struct {
	g     *RedlockGroup
	key   string
	token lock.Token
	ttl   time.Duration
	start time.Time // when the acquisition was sent
	// servers[i] is the lease on the group's server i: in small for a group of up to
	// three, so that the handle is one allocation.
	servers []redlockServer
	small   [3]redlockServer
	// tokenText backs token, never written after newRedlock.
	tokenText [tokenTextLen]byte
	// par waits for the goroutines of the servers whose start half declined
	// (runDeclined), in the acquisition, then in each release.
	par sync.WaitGroup

	mu         sync.Mutex
	validUntil time.Time // end of the validity; zero once the handle stopped owning

	// keeper runs the keep-alive (package lock's); it keeps the cause of a loss or
	// release, which the keep-alive's context ends with.
	keeper lock.Keeper

	// releasing is the release turn, one release at a time: a retry must see the last
	// one's results. Whoever has it owns the servers' tokens and errs, and released.
	releasing turn
	released  lock.ReleaseOutcome // of the first release a quorum confirmed (Released or NotOwned); 0 before
}

// redlockServer is a Redlock's lease on one server.
type redlockServer struct {
	// lease manages it (package lock's handle, with its renewal, release outcomes and
	// fencing of uncertain commands); nil where the acquisition was refused or never
	// sent, so the token is not there.
	lease *lock.Lock
	held  lock.Lock // what lease points to: adopted in place (lock.Locker.AdoptInto), without an allocation
	token tokenState
	taken bool  // the acquisition took it there
	err   error // why the acquisition, then the last release, failed there
	// started: held's start half sent the acquisition or the release, whose finish
	// half is still to run, with call; declined: it would have waited before it sent,
	// and the whole call is still to run (runDeclined).
	started, declined bool
	call              link.LockCall
}

// tokenState is what a Redlock knows of its token on one server.
type tokenState uint8

const (
	tokenMaybeThere tokenState = iota // taken there, or maybe: no release has confirmed it gone
	tokenDeleted                      // a release of this handle deleted it
	tokenGone                         // never taken there, or found gone by a release (expired, deleted)
)

// TryAcquire takes key for ttl on every server of the group in parallel, each within
// NodeTimeout, with one fresh owner token. ok is true when a majority took it and
// validity remains: ttl − elapsed − (ttl × DriftFactor + 2 ms). Otherwise the servers
// that took it (or may have) are released before the next attempt or before
// TryAcquire returns, and ok is false: with a nil error when every server answered
// (contention, or a TTL used up by slow answers), with one matching ErrNoQuorum (and
// holding the servers' errors) when servers failed. A failed attempt is no proof that
// another owner holds the key.
//
// Options are package lock's. lock.WithWait(d) makes attempts until one acquires or d
// has passed (ok false when the budget ends; with the last attempt's ErrNoQuorum if it
// failed so; a negative d refused), pausing between them with the retry strategy:
// lock.ExponentialRetry(25ms, 400ms) unless lock.WithRetry or lock.WithRetryEvery
// says otherwise (there is no single server whose key changes could be watched), and
// lock.WithMaxAttempts caps them. lock.WithKeepAlive starts KeepAlive once acquired,
// owned by the lease (the acquisition's ctx does not control it).
//
// Cancellation ends the wait and the attempt (the error matches ctx's), but cannot
// recall a SET already written: such a key stays until its TTL ends if the clean-up
// cannot reach its server.
func (g *RedlockGroup) TryAcquire(ctx context.Context, key string, ttl time.Duration, opts ...lock.Option) (*Redlock, bool, error) {
	if err := g.checkLease(key, ttl); err != nil {
		return nil, false, err
	}
	// Without options there is one attempt, so no retry strategy to set: parsed
	// without one, they cost nothing.
	w, err := lock.NewWaiting()
	if len(opts) > 0 {
		w, err = lock.NewWaiting(append([]lock.Option{lock.WithRetry(redlockRetry)}, opts...)...)
	}
	if err != nil {
		return nil, false, err
	}
	var got *Redlock
	var failed error // the last attempt's ErrNoQuorum, which the wait goes on after
	// lock's wait loop, without a key to watch: it polls with the strategy.
	_, err = g.nodes[0].locks.Wait(ctx, w, "", func(ctx context.Context) (bool, time.Duration, error) {
		rl, ok, err := g.try(ctx, key, ttl)
		failed = nil
		if errors.Is(err, ErrNoQuorum) && ctx.Err() == nil {
			// Every server's part was given back (or its clean-up tried): another
			// attempt is as safe as this one was.
			failed = err
			return false, 0, nil
		}
		got = rl
		return ok, 0, err
	})
	switch {
	case got != nil:
		if w.KeepAlive() {
			_, _ = got.KeepAlive(context.WithoutCancel(ctx)) // nothing lost it yet
		}
		return got, true, nil
	case err == nil:
		err = failed
	}
	return nil, false, err
}

// redlockRetry spaces a Redlock's attempts by default: random pauses ("full jitter")
// keep contenders from retrying in step, as the Redlock algorithm asks.
var redlockRetry = lock.ExponentialRetry(25*time.Millisecond, 400*time.Millisecond)

// try is one attempt of TryAcquire.
func (g *RedlockGroup) try(ctx context.Context, key string, ttl time.Duration) (*Redlock, bool, error) {
	known, errs, err := g.identify(ctx)
	if err != nil {
		return nil, false, err
	}
	report(ctx, g.obs, observe.LockAttempt, time.Time{}, nil)
	rl := g.newRedlock(key, ttl)
	start := time.Now()
	rl.start = start
	for i := range known {
		if !known[i] {
			rl.servers[i].err = errs[i] // no vote without an identity
		}
	}
	rl.take(ctx, start.Add(g.timeout))
	validity := redlockValidity(ttl, time.Since(start), g.driftMargin(ttl))
	votes := 0
	for i := range g.nodes {
		s := &rl.servers[i]
		// A SET that may have run is managed like one that did, so that the release
		// below or the handle's reaches it.
		if s.taken || conn.WasWritten(s.err) {
			s.lease = &s.held // adopted by take
		} else {
			s.token = tokenGone
		}
		if s.taken {
			votes++
		}
	}
	if votes >= g.quorum && validity > 0 {
		rl.acquireErrors() // a minority's failures do not fail the acquisition
		rl.validUntil = start.Add(ttl - g.driftMargin(ttl))
		report(ctx, g.obs, observe.LockAcquired, start, nil)
		return rl, true, nil
	}
	failed := rl.acquireErrors()
	// A failed attempt gives back what it got, even when ctx has ended.
	rl.release(context.WithoutCancel(ctx))
	err = nil
	switch {
	case ctx.Err() != nil:
		err = context.Cause(ctx)
	case failed != nil:
		err = fmt.Errorf("%w: %d of %d servers took %q (quorum %d): %w", ErrNoQuorum, votes, len(g.nodes), key, g.quorum, failed)
	case votes >= g.quorum:
		// A quorum, but slow answers used up the TTL.
		report(ctx, g.obs, observe.LockGaveUp, start, lock.ErrLeaseExpired)
		return nil, false, nil
	default:
		report(ctx, g.obs, observe.LockContended, start, nil)
		return nil, false, nil
	}
	report(ctx, g.obs, observe.LockGaveUp, start, err)
	return nil, false, err
}

// newRedlock returns the handle of an acquisition about to be sent, with a fresh
// token. A group of up to three servers keeps their states in the handle itself.
func (g *RedlockGroup) newRedlock(key string, ttl time.Duration) *Redlock {
	rl := &Redlock{g: g, key: key, ttl: ttl}
	rl.token = lock.TokenFromString(newTokenText(&rl.tokenText))
	if len(g.nodes) <= len(rl.small) {
		rl.servers = rl.small[:len(g.nodes)]
	} else {
		rl.servers = make([]redlockServer, len(g.nodes))
	}
	return rl
}

// halves are package lock's acquisition and release of a handle, each split in a half
// that sends and a half that collects.
var halves = link.LockHalvesOf[lock.Lock, lock.ReleaseOutcome]()

// afterSend, when set, runs once an acquisition or a release has sent what it could to
// every server and before it collects a reply, with the deadline of each server's
// part: tests use it to act between the halves. Atomic: a Redlock left running by one
// test may read it while the next sets it.
var afterSend atomic.Pointer[func(by time.Time)]

// runAfterSend runs the afterSend hook, if one is set.
func runAfterSend(by time.Time) {
	if f := afterSend.Load(); f != nil {
		(*f)(by)
	}
}

// take sends the acquisition to every server with a vote (its error is not set
// already), from the calling goroutine, then collects each reply and records it. A
// goroutine per server would cost more than the commands: each grew its stack through
// the whole call path. A server whose connection must be dialled first is sent to
// by takeOn on a goroutine of its own (runDeclined), so that its dial holds up no
// other server.
//
// by is the NodeTimeout deadline of every server's part, handed to each call rather
// than set on a context derived from ctx: each connection would watch such a context,
// which is new every time, and the context and its watches were most of what a cycle
// allocated.
func (rl *Redlock) take(ctx context.Context, by time.Time) {
	for i := range rl.servers {
		s := &rl.servers[i]
		// Adopted on every server, sent to or not: try manages the lease wherever its
		// error says something may have been written.
		if err := rl.g.nodes[i].locks.AdoptInto(&s.held, rl.key, rl.token, rl.ttl, rl.start); s.err == nil {
			s.err = err
		}
		if s.err != nil {
			continue
		}
		s.started = halves.StartTake(&s.held, ctx, &s.call, by)
		s.declined = !s.started
	}
	runAfterSend(by)
	rl.runDeclined(ctx, by, (*Redlock).takeOn)
	for i := range rl.servers {
		if s := &rl.servers[i]; s.started {
			s.started = false
			if s.taken, s.err = halves.FinishTake(&s.held, &s.call); s.err != nil {
				s.err = fmt.Errorf("client %d: %w", i, s.err)
			}
		}
	}
}

// releaseAll deletes the lease, as take takes it, on every server where its token may
// still be, each within by, and records what it learns.
func (rl *Redlock) releaseAll(ctx context.Context, by time.Time) {
	for i := range rl.servers {
		if s := &rl.servers[i]; s.token == tokenMaybeThere {
			s.started = halves.StartRelease(s.lease, ctx, &s.call, by)
			s.declined = !s.started
		}
	}
	runAfterSend(by)
	rl.runDeclined(ctx, by, (*Redlock).releaseOn)
	for i := range rl.servers {
		if s := &rl.servers[i]; s.started {
			s.started = false
			s.released(halves.FinishRelease(s.lease, &s.call))
		}
	}
}

// runDeclined runs op for every server whose start half declined (it would have
// waited before it sent), in parallel, the last on the calling goroutine and the
// others on goroutines it waits for, without a closure of its own: op is a method
// expression and the WaitGroup the handle's. The acquisition and the releases (one at
// a time, in the release turn) use it in turn, never together.
func (rl *Redlock) runDeclined(ctx context.Context, by time.Time, op func(rl *Redlock, ctx context.Context, by time.Time, i int)) {
	last := -1
	for i := range rl.servers {
		if rl.servers[i].declined {
			last = i
		}
	}
	if last < 0 {
		return
	}
	for i := range last {
		if rl.servers[i].declined {
			rl.par.Add(1)
			go func() {
				defer rl.par.Done()
				op(rl, ctx, by, i)
			}()
		}
	}
	op(rl, ctx, by, last)
	rl.par.Wait()
}

// takeOn sends the acquisition to server i whose start half declined, waiting for its
// connection, and records the answer.
func (rl *Redlock) takeOn(ctx context.Context, by time.Time, i int) {
	s := &rl.servers[i]
	s.declined = false
	if s.taken, s.err = rl.g.nodes[i].locks.TryTakeBy(ctx, by, rl.key, rl.token, rl.ttl); s.err != nil {
		s.err = fmt.Errorf("client %d: %w", i, s.err)
	}
}

// releaseOn is lock.Lock.ReleaseBy on server i, whose start half declined.
func (rl *Redlock) releaseOn(ctx context.Context, by time.Time, i int) {
	s := &rl.servers[i]
	s.declined = false
	s.released(s.lease.ReleaseBy(ctx, by))
}

// acquireErrors joins, and forgets, why the acquisition failed on each server, for an
// attempt that did not acquire: they are the attempt's, not its clean-up's.
func (rl *Redlock) acquireErrors() error {
	var errs []error
	for i := range rl.servers {
		if s := &rl.servers[i]; s.err != nil {
			errs = append(errs, s.err)
			s.err = nil
		}
	}
	return errors.Join(errs...)
}

// Key returns the key as given, without the clients' key prefixes.
func (rl *Redlock) Key() string { return rl.key }

// Token returns the owner token stored on the servers.
func (rl *Redlock) Token() lock.Token { return rl.token }

// Duration returns the TTL the lease was acquired with.
func (rl *Redlock) Duration() time.Duration { return rl.ttl }

// ValidUntilEstimate returns the end of the lease's validity: when the last successful
// acquisition or renewal was sent, plus its TTL, less the drift margin. It is zero once
// the handle no longer reports ownership (after a failed renewal or a release). It is a
// local estimate, not an ownership proof.
func (rl *Redlock) ValidUntilEstimate() time.Time {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.validUntil
}

// RemainingEstimate returns the validity left, or 0 once it has ended or the handle no
// longer reports ownership. Finish the protected work, or renew, well within it: it is
// a local estimate, and a process pause does not stop it running down.
func (rl *Redlock) RemainingEstimate() time.Duration {
	return max(time.Until(rl.ValidUntilEstimate()), 0)
}

// ResetExpiry sets the lease to d from now on every server that still holds this
// handle's token, in parallel, each within NodeTimeout. It returns true only when a
// majority renewed before the previous validity ended and validity remains (d −
// elapsed − the drift margin); the validity then runs from this renewal. Otherwise the
// handle no longer reports ownership (stop the protected work; acquire anew) and the
// error, if servers failed, matches ErrNoQuorum. A renewal whose outcome is uncertain
// on a server is cut off there as package lock cuts it off, and that server counts
// as lost; the cut-off goes on in the background, holding up no renewal past
// NodeTimeout.
func (rl *Redlock) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	if err := rl.g.checkLease(rl.key, d); err != nil {
		return false, err
	}
	prevEnd := rl.ValidUntilEstimate()
	if !time.Now().Before(prevEnd) {
		rl.lose(ctx, lock.ErrLeaseExpired)
		return false, nil
	}
	renewed := make([]bool, len(rl.servers))
	errs := make([]error, len(rl.servers))
	start := time.Now()
	each(len(rl.servers), func(i int) {
		lease := rl.servers[i].lease
		if lease == nil {
			return
		}
		// A renewal that lands after the previous validity is of no use to the quorum.
		deadline := time.Now().Add(rl.g.timeout)
		if prevEnd.Before(deadline) {
			deadline = prevEnd
		}
		nctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		renewed[i], errs[i] = lease.ResetExpiry(nctx, d)
	})
	end := time.Now()
	votes := 0
	for _, ok := range renewed {
		if ok {
			votes++
		}
	}
	margin := rl.g.driftMargin(d)
	if votes >= rl.g.quorum && end.Before(prevEnd) && redlockValidity(d, end.Sub(start), margin) > 0 {
		if !rl.renewed(start.Add(d - margin)) {
			return false, nil // released meanwhile
		}
		rl.keeper.Moved((*redlockRenewal)(rl))
		report(ctx, rl.g.obs, observe.LockRenewed, time.Time{}, nil)
		return true, nil
	}
	if err := errors.Join(errs...); err != nil {
		err = fmt.Errorf("%w: %d of %d servers renewed %q (quorum %d): %w", ErrNoQuorum, votes, len(rl.servers), rl.key, rl.g.quorum, err)
		rl.lose(ctx, err)
		return false, err
	}
	if votes >= rl.g.quorum {
		rl.lose(ctx, lock.ErrLeaseExpired) // renewed, but too late or too slowly to be of use
	} else {
		rl.lose(ctx, lock.ErrLeaseLost)
	}
	return false, nil
}

// renewed moves the validity to validUntil, unless the handle stopped owning
// meanwhile, and reports whether it did. Its event is the caller's to send, with rl.mu
// unlocked, so that an observer may call back into the handle.
func (rl *Redlock) renewed(validUntil time.Time) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.validUntil.IsZero() {
		return false
	}
	rl.validUntil = validUntil
	return true
}

// disown makes the handle stop reporting ownership, and reports whether it owned.
func (rl *Redlock) disown() bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	owned := !rl.validUntil.IsZero()
	rl.validUntil = time.Time{}
	return owned
}

// lose is disown for a renewal that failed, reported as the lease's loss with cause,
// which ends the keep-alive.
func (rl *Redlock) lose(ctx context.Context, cause error) {
	owned := rl.disown()
	rl.keeper.Lose(cause)
	if owned {
		report(ctx, rl.g.obs, observe.LockLost, rl.start, cause)
	}
}

// KeepAlive starts renewing the lease on a quorum, with lock.Lock's keep-alive (the
// same code): whenever less than half the TTL is left of the validity, it calls
// ResetExpiry for the full TTL. Its Context ends when ctx ends; when a renewal does
// not reach a quorum within the validity: lock.ErrLeaseLost when a quorum no longer
// holds the token, and when servers failed an error matching ErrNoQuorum (and
// lock.ErrOwnershipUncertain where a server's outcome is unknown); when the validity
// runs out before a renewal succeeds (lock.ErrLeaseExpired); on Release
// (lock.ErrReleased once a quorum confirmed it, otherwise the release's cause: see
// Release); or on Stop (lock.ErrKeepAliveStopped). Release stops the renewals before its deletes are sent.
// If a keep-alive already runs, it is returned; a lease lost or released returns that
// cause as the error.
//
// While a Release is in flight it starts nothing, since no renewal may run with or
// after the deletes: it returns the keep-alive the release halts, or one that never
// renews; either ends with the release's cause before Release returns.
func (rl *Redlock) KeepAlive(ctx context.Context) (*lock.KeepAlive, error) {
	// The Keeper looks at the release in flight before the validity, which the release
	// zeroes before it settles.
	return rl.keeper.Start(ctx, (*redlockRenewal)(rl))
}

// KeepAliveContext returns a context for the protected work, as lock.Lock's does: the
// running keep-alive's (see KeepAlive), or without one a context that ends a twentieth
// of the TTL before the end of the validity; either ends once the handle stops owning
// the lease, with the cause.
func (rl *Redlock) KeepAliveContext() context.Context {
	return rl.keeper.Context((*redlockRenewal)(rl))
}

// redlockRenewal is a Redlock as the lock.Renewable its keep-alive renews.
type redlockRenewal Redlock

func (l *redlockRenewal) Duration() time.Duration      { return l.ttl }
func (l *redlockRenewal) ExpiresAtEstimate() time.Time { return (*Redlock)(l).ValidUntilEstimate() }
func (l *redlockRenewal) Lost() error                  { return l.keeper.Lost() }
func (l *redlockRenewal) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	return (*Redlock)(l).ResetExpiry(ctx, d)
}
func (l *redlockRenewal) ReportLost(ctx context.Context, cause error) { (*Redlock)(l).lose(ctx, cause) }

// VerifyStillHeld asks every server whether the key still holds this lease's token, in
// parallel, each within NodeTimeout, and reports whether a majority of the group does
// (redsync's Valid). It checks one instant: the validity (ValidUntilEstimate) is what
// the protected work must fit in. When fewer than a majority hold it and servers
// failed, the error matches ErrNoQuorum.
func (rl *Redlock) VerifyStillHeld(ctx context.Context) (bool, error) {
	held := make([]bool, len(rl.servers))
	errs := make([]error, len(rl.servers))
	each(len(rl.servers), func(i int) {
		lease := rl.servers[i].lease
		if lease == nil {
			return // never taken there
		}
		nctx, cancel := context.WithTimeout(ctx, rl.g.timeout)
		defer cancel()
		if held[i], errs[i] = lease.VerifyStillHeld(nctx); errs[i] != nil {
			errs[i] = fmt.Errorf("client %d: %w", i, errs[i])
		}
	})
	votes := 0
	for _, ok := range held {
		if ok {
			votes++
		}
	}
	if votes >= rl.g.quorum {
		return true, nil
	}
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		return false, fmt.Errorf("%w: %d of %d servers hold %q (quorum %d): %w", ErrNoQuorum, votes, len(rl.servers), rl.key, rl.g.quorum, err)
	}
	return false, nil
}

// Release deletes the lease on every server where its token may still be, in
// parallel, all within NodeTimeout, and reports whether a majority of the group has
// now confirmed the token gone: deleted by this handle's releases, or gone already
// (expired, deleted by someone else, or never taken there). The handle stops reporting
// ownership at once, whatever the outcome. A keep-alive stops renewing before the
// deletes are sent (Release waits for a renewal in progress) and its context ends
// before Release returns: with lock.ErrReleased when a quorum confirmed the release,
// lock.ErrLeaseLost when the lease had been lost before it, the release's error when
// it failed (matching lock.ErrOwnershipUncertain when a delete's outcome is unknown),
// and lock.ErrKeepAliveStopped when ctx ended before the renewal in progress did. When a quorum was not confirmed the error
// matches ErrNoQuorum: Release may be called again, and sends only to the servers not
// yet confirmed; what it cannot reach ends at the TTL.
//
// The observer hears the release as observe.Released only when this handle's deletes
// reached a majority, which proves a majority held the lease until then. When a quorum
// confirmed the token gone but fewer than a majority of deletes found it, the lease
// may have been lost before the release, and is reported as observe.NotOwned; a
// failed release as observe.ReleaseFailed; a release after one that a quorum confirmed
// as observe.AlreadyReleased (observe.NotOwned if that one found the lease lost).
func (rl *Redlock) Release(ctx context.Context) (bool, error) {
	ran, ok, outcome, err := rl.releaseInTurn(ctx)
	if ran {
		// Reported once the turn is given back: an observer may release the lease too.
		reportRelease(ctx, rl.g.obs, outcome, rl.start, err)
	}
	return ok, err
}

// releaseInTurn waits for the release turn and runs release; ran is false when ctx
// ended first. The handle stops owning either way.
func (rl *Redlock) releaseInTurn(ctx context.Context) (ran, ok bool, outcome lock.ReleaseOutcome, err error) {
	if err := rl.releasing.take(ctx); err != nil {
		rl.disown() // the release that has the turn disowned already
		return false, false, 0, err
	}
	defer rl.releasing.give()
	// Halted before the handle disowns: a renewal in progress would otherwise find the
	// lease disowned and end the keep-alive as lost rather than released.
	halted := rl.keeper.Halt(ctx)
	rl.disown()
	if err := halted; err != nil {
		rl.keeper.Settle(fmt.Errorf("%w: %w", lock.ErrKeepAliveStopped, err), nil)
		return true, false, 0, err
	}
	ok, outcome, err = rl.release(ctx)
	switch {
	case err != nil:
		// The handle no longer owns the lease, whatever became of it: no keep-alive
		// may go on.
		rl.keeper.Settle(err, nil)
	case outcome == lock.NotOwned:
		rl.keeper.Settle(lock.ErrLeaseLost, nil)
	default:
		rl.keeper.Settle(lock.ErrReleased, nil)
	}
	return true, ok, outcome, err
}

// release is Release once the caller has the turn: it deletes the lease on the servers
// where the token may still be and reports whether a quorum has now confirmed it gone,
// with the outcome as Release's doc describes it.
func (rl *Redlock) release(ctx context.Context) (bool, lock.ReleaseOutcome, error) {
	rl.releaseAll(ctx, time.Now().Add(rl.g.timeout))
	deleted, gone := 0, 0
	for i := range rl.servers {
		switch rl.servers[i].token {
		case tokenDeleted:
			deleted++
		case tokenGone:
			gone++
		}
	}
	switch {
	case rl.released == lock.Released:
		return true, lock.AlreadyReleased, nil
	case rl.released != 0:
		return true, rl.released, nil
	case deleted+gone < rl.g.quorum:
		return false, 0, fmt.Errorf("%w: %d of %d servers confirmed the release of %q (quorum %d): %w",
			ErrNoQuorum, deleted+gone, len(rl.servers), rl.key, rl.g.quorum, rl.releaseErrors())
	case deleted >= rl.g.quorum:
		rl.released = lock.Released
	default:
		rl.released = lock.NotOwned
	}
	return true, rl.released, nil
}

// releaseErrors joins, and forgets, why the release failed on each server not yet
// confirmed, for a release short of a quorum.
func (rl *Redlock) releaseErrors() error {
	var errs []error
	for i := range rl.servers {
		if s := &rl.servers[i]; s.token == tokenMaybeThere {
			errs = append(errs, fmt.Errorf("client %d: %w", i, s.err))
			s.err = nil
		}
	}
	return errors.Join(errs...)
}

// released records what a release of the lease on s returned.
func (s *redlockServer) released(out lock.ReleaseOutcome, err error) {
	switch {
	case err != nil:
		s.err = err
	case out == lock.NotOwned:
		s.token = tokenGone
	default: // lock.Released, or AlreadyReleased by an earlier call that deleted it
		s.token = tokenDeleted
	}
}

// Close makes one best-effort release, as a deferred call should: servers it cannot
// reach free the key when its TTL ends. It returns only a server's refusal (such as
// NOPERM), which expiry does not make harmless. It is a no-op on a nil handle, so it
// can be deferred before checking ok.
func (rl *Redlock) Close() error {
	if rl == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), redlockCloseTimeout)
	defer cancel()
	_, err := rl.Release(ctx)
	return bestEffort(err)
}
