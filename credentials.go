package respire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
)

// Rotating credentials (Options.Credentials).
//
// Every dial asks the provider (conn.Options.Credentials), and every connection the
// client dials, of every kind (shared, dedicated, tracking, subscription, lock), is
// registered by the OnConnect hook once its handshake is done (one dialled with
// credentials older than the newest is re-authenticated there, before it is handed
// out; a pass that finds it doing so waits for it within the pass's own deadline, not
// the dial's, and then re-authenticates it if newer ones came; so does a pass that
// finds a connection still re-authenticating with older credentials for an earlier
// pass). A goroutine owned by the Client asks the provider again before the
// credentials it last gave expire, and re-authenticates every registered connection
// still alive and not yet authenticated with the new ones (conn.Conn.Reauth: in order
// with the connection's traffic, and behind the EXEC of a transaction open on it).
//
// The refresh is due at ExpiresAt − max(10% of the life the credentials had when they
// were fetched, 1 s): an hour-long token is renewed six minutes before it ends, a
// ten-second one a second before. Credentials without ExpiresAt are not refreshed on a
// schedule (Client.Reauthenticate does it on demand). A provider that fails (or gives
// no password) is asked again after 250 ms, doubling to 5 s, and each failure is
// reported to the observer (observe.ConnReauth with Err and no Addr); connections keep
// the credentials they have meanwhile. The schedule waits 5 s for the connections'
// AUTHs (less when the next renewal is due sooner); one still waiting then (queued
// behind a blocking command, or a transaction in progress) finishes in the background
// and is not sent again meanwhile; if newer credentials came while it waited, it is
// re-authenticated with them as soon as it ends. A refused connection (even one
// refused in the background) is retried with the same backoff, alone: the others, and
// the renewal due at its time, do not wait for it.

const (
	refreshLeadShare = 10                     // the lead before expiry is the life's tenth...
	refreshLeadMin   = time.Second            // ...and at least this
	refreshWaitMin   = 250 * time.Millisecond // a provider giving near-expired credentials is not asked in a spin
	retryFirst       = 250 * time.Millisecond
	retryMax         = 5 * time.Second
	providerTimeout  = 10 * time.Second
	// reauthWait is how long the schedule waits for the connections' AUTHs. One that
	// waits behind a blocking command or a transaction is not given up: it goes on in
	// the background and is not sent again meanwhile.
	reauthWait = 5 * time.Second
)

// authConn is what the rotation needs of a connection (*conn.Conn; a fake in tests).
type authConn interface {
	Reauth(ctx context.Context, cr Credentials) error
	AuthenticatedWith(cr Credentials) bool
	Done() <-chan struct{}
}

// credentialRotation keeps a Client's connections authenticated with the newest
// credentials its provider gives.
type credentialRotation struct {
	provide func(context.Context) (Credentials, error)
	obs     observe.Observer // nil for none

	mu        sync.Mutex
	cur       Credentials // the newest the provider gave
	curSeq    uint64      // the sequence number of the ask that gave cur
	gen       uint64      // how many times cur changed: 1 for the first credentials
	seq       uint64      // asks started
	refreshAt time.Time   // when cur is due for renewal; zero for never
	conns     map[authConn]struct{}
	pruneAt   int                        // the registry size at which dead connections are next dropped
	inflight  map[authConn]*reauthFlight // connections being re-authenticated
	// dials are the dials in progress, by the sequence number of their ask: the Done
	// channel of the dial's context, which conn.Dial ends as it returns.
	dials      map[uint64]<-chan struct{}
	dialsPrune int  // the size of dials at which ended dials are next dropped
	closed     bool // close has begun: no more re-authentications start

	wake    chan struct{}   // the credentials changed outside the schedule: look again
	late    chan struct{}   // a re-authentication was refused: retry it
	ctx     context.Context // ends when the client closes
	cancel  context.CancelFunc
	loop    sync.WaitGroup // the schedule's goroutine
	reauths sync.WaitGroup // one goroutine per re-authentication running
}

// newCredentialRotation returns the rotation of o.Credentials, or nil without one.
func newCredentialRotation(o *Options, obs observe.Observer) *credentialRotation {
	if o.Credentials == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &credentialRotation{
		provide:    o.Credentials,
		obs:        obs,
		conns:      map[authConn]struct{}{},
		inflight:   map[authConn]*reauthFlight{},
		pruneAt:    64,
		dials:      map[uint64]<-chan struct{}{},
		dialsPrune: 64,
		wake:       make(chan struct{}, 1),
		late:       make(chan struct{}, 1),
		ctx:        ctx,
		cancel:     cancel,
	}
}

// provider is the conn.Options.Credentials of the client's dials; nil without a
// rotation.
func (r *credentialRotation) provider() func(context.Context) (Credentials, error) {
	if r == nil {
		return nil
	}
	return func(ctx context.Context) (Credentials, error) { return r.ask(ctx, true, true) }
}

// hook is the conn.Options.OnConnect of the client's dials: user's hook, then the
// registration; just user's without a rotation.
func (r *credentialRotation) hook(user func(context.Context, *conn.Conn) error) func(context.Context, *conn.Conn) error {
	if r == nil {
		return user
	}
	return func(ctx context.Context, cn *conn.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		return r.register(ctx, cn)
	}
}

// ask asks the provider and keeps what it gives if no later ask has given something
// already; no password is an error. With notify, new credentials wake the schedule,
// to re-authenticate the connections and follow their expiry. A dial's ask records the
// dial as in progress until its ctx ends (as conn.Dial returns), for rotate.
func (r *credentialRotation) ask(ctx context.Context, notify, dial bool) (Credentials, error) {
	r.mu.Lock()
	r.seq++
	seq := r.seq
	if done := ctx.Done(); dial && done != nil {
		if len(r.dials) >= r.dialsPrune {
			r.pruneDialsLocked()
			r.dialsPrune = max(2*len(r.dials), 64)
		}
		r.dials[seq] = done
	}
	r.mu.Unlock()
	start := time.Now()
	cr, err := r.provide(ctx)
	if err == nil && cr.Password == "" {
		// As a dial fails on it: credentials without a password would re-authenticate
		// nothing and let the ones in use run out unnoticed.
		err = conn.ErrNoPassword
	}
	if err != nil {
		return cr, err
	}
	r.mu.Lock()
	changed := false
	if seq > r.curSeq {
		// Compared by content: every dial asks, and a provider that hands out the
		// same token again has brought nothing to re-authenticate with or reschedule.
		r.curSeq = seq
		if changed = !sameCredentials(cr, r.cur); changed {
			r.cur = cr
			r.gen++
			r.refreshAt = refreshTime(start, cr.ExpiresAt)
		}
	}
	r.mu.Unlock()
	if changed && notify {
		signal(r.wake)
	}
	return cr, nil
}

// sameCredentials reports whether a and b are the same credentials: user, password
// and expiry.
func sameCredentials(a, b Credentials) bool {
	return a.Username == b.Username && a.Password == b.Password && a.ExpiresAt.Equal(b.ExpiresAt)
}

// refreshTime is when credentials fetched at fetched and ending at expires are due for
// renewal; zero for credentials that do not expire.
func refreshTime(fetched, expires time.Time) time.Time {
	if expires.IsZero() {
		return time.Time{}
	}
	life := expires.Sub(fetched)
	return expires.Add(-max(life/refreshLeadShare, refreshLeadMin))
}

// register adds a connection just dialled; if it was dialled with credentials older
// than the newest, it is re-authenticated before it is handed out, within the dial's
// ctx. That AUTH is a flight like a pass's, recorded in the same critical section that
// adds the connection: a pass finds the connection either authenticated, or in flight
// (and waits for it within its own ctx, never the dial's), so none falls between the
// two and none is sent a second AUTH meanwhile.
func (r *credentialRotation) register(ctx context.Context, cn authConn) error {
	r.mu.Lock()
	if len(r.conns) >= r.pruneAt {
		r.pruneLocked()
		r.pruneAt = max(2*len(r.conns), 64)
	}
	r.conns[cn] = struct{}{}
	cur := r.cur
	if cur.Password == "" || cn.AuthenticatedWith(cur) {
		r.mu.Unlock()
		return nil
	}
	f := &reauthFlight{cn: cn, cr: cur, gen: r.gen, done: make(chan struct{}), dial: true, dialDone: ctx.Done()}
	r.inflight[cn] = f
	r.mu.Unlock()
	err := cn.Reauth(ctx, cur)
	if err != nil {
		// The dial returns err and closes the connection: out of the registry before
		// the flight lands, so that no pass waiting for it sends it an AUTH of its own,
		// and nothing for a pass to report or retry.
		r.mu.Lock()
		delete(r.conns, cn)
		r.mu.Unlock()
	}
	r.land(f, nil)
	return err
}

// pruneLocked drops the connections that have broken or closed.
func (r *credentialRotation) pruneLocked() {
	for cn := range r.conns {
		if isDone(cn.Done()) {
			delete(r.conns, cn)
		}
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// look is what a pass found in the registry.
type look struct {
	gen   uint64          // the generation of credentials the pass brings the connections to
	start []*reauthFlight // re-authentications it started, with the newest credentials
	wait  []*reauthFlight // start, and those other passes or registrations run with gen or newer
	older []*reauthFlight // other re-authentications and registrations still running with older ones
}

// stale starts a re-authentication with the newest credentials for each live
// connection not authenticated with them and not being re-authenticated already, and
// returns what it found, judged against the credentials of generation gen (0 for the
// newest). It returns false once the rotation is closing.
func (r *credentialRotation) stale(gen uint64) (l look, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return look{}, false
	}
	if gen == 0 {
		gen = r.gen
	}
	l.gen = gen
	r.pruneLocked()
	for cn := range r.conns {
		if f, busy := r.inflight[cn]; busy {
			if f.gen >= gen {
				l.wait = append(l.wait, f)
			} else {
				l.older = append(l.older, f)
			}
			continue
		}
		if !cn.AuthenticatedWith(r.cur) {
			f := &reauthFlight{cn: cn, cr: r.cur, gen: r.gen, done: make(chan struct{})}
			r.inflight[cn] = f
			l.start = append(l.start, f)
			l.wait = append(l.wait, f)
		}
	}
	r.reauths.Add(len(l.start))
	return l, true
}

// reauthFlight is one connection's re-authentication in progress.
type reauthFlight struct {
	cn   authConn
	cr   Credentials
	gen  uint64        // cr's generation (credentialRotation.gen)
	done chan struct{} // closed when it has ended, with err
	err  error         // a refusal or failure; nil for none worth retrying
	dial bool          // the registration of a connection being dialled (register)
	// dialDone is the Done channel of that dial's context, as recorded in dials.
	dialDone <-chan struct{}
}

// rotate asks the provider and re-authenticates every connection with what it gives,
// waiting for them until ctx ends, those still busy with an older re-authentication
// included. Connections being dialled as the new credentials come, perhaps with those
// they replace, are waited for too: each either registers before the pass (which
// takes it) or after the new credentials came (and re-authenticates itself with them
// before its dial returns). Each connection is counted once in the error.
func (r *credentialRotation) rotate(ctx context.Context) error {
	left, behind, err := r.rotateCounted(ctx)
	if left > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d connections not re-authenticated yet: %w", ErrReauthPending, left, context.Cause(ctx)))
	}
	if behind > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d connections still re-authenticating with older credentials: %w", ErrReauthPending, behind, context.Cause(ctx)))
	}
	return err
}

// rotateCounted is rotate's work: it returns how many connections were left
// re-authenticating as ctx ended, or dialling, and how many still with older
// credentials, with the provider's or the connections' errors.
func (r *credentialRotation) rotateCounted(ctx context.Context) (left, behind int, err error) {
	if err := r.fetch(ctx, true); err != nil {
		return 0, 0, err
	}
	dialing := r.dialsInProgress()
	pending, older, err := r.reauthAll(ctx)
	waitDone(ctx, dialing)
	// A dial still in progress whose registration the pass found is counted there.
	counted := make(map[<-chan struct{}]bool)
	for _, f := range slices.Concat(pending, older) {
		if f.dialDone != nil {
			counted[f.dialDone] = true
		}
	}
	left = len(pending)
	for _, done := range dialing {
		if !isDone(done) && !counted[done] {
			left++
		}
	}
	return left, len(older), err
}

// dialsInProgress returns the Done channels of the dials in progress.
func (r *credentialRotation) dialsInProgress() []<-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneDialsLocked()
	out := make([]<-chan struct{}, 0, len(r.dials))
	for _, done := range r.dials {
		out = append(out, done)
	}
	return out
}

// pruneDialsLocked drops the dials that have ended.
func (r *credentialRotation) pruneDialsLocked() {
	for seq, done := range r.dials {
		if isDone(done) {
			delete(r.dials, seq)
		}
	}
}

// waitDone waits for every channel to close, or for ctx to end.
func waitDone(ctx context.Context, chans []<-chan struct{}) {
	for _, ch := range chans {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// fetch asks the provider for new credentials, reporting a failure; notify is ask's.
func (r *credentialRotation) fetch(ctx context.Context, notify bool) error {
	ctx, cancel := context.WithTimeout(ctx, providerTimeout)
	defer cancel()
	if _, err := r.ask(ctx, notify, false); err != nil {
		err = fmt.Errorf("%w: %w", conn.ErrCredentials, err)
		if r.obs != nil {
			r.obs.Conn(observe.Conn{Kind: observe.ConnReauth, Err: err})
		}
		return err
	}
	return nil
}

// reauthAll re-authenticates, all at once, every live connection not authenticated
// with the newest credentials, and waits for them, and for those other passes are
// re-authenticating with the newest, until ctx ends: then those still running (behind
// a blocking command, say) go on in the background, bounded by the client's life, and
// are returned in pending, not as failures. A connection still re-authenticating with
// older credentials (behind a blocking command or still being dialled) is waited for
// first, and once it is done, re-authenticated with the newest; if ctx ends before,
// it is returned in pending when it is being dialled, in behind otherwise. No lock is
// held while it waits, so passes run side by side, each starting connections of its
// own. A connection that broke meanwhile, or a RESP2 subscription (which the server
// does not let re-authenticate, and which keeps its credentials until it reconnects),
// is no failure either.
func (r *credentialRotation) reauthAll(ctx context.Context) (pending, behind []*reauthFlight, err error) {
	l, ok := r.stale(0)
	if !ok {
		return nil, nil, ErrClosed
	}
	r.launch(l.start)
	wait, older := l.wait, l.older
	// Every flight started since the first look has credentials of l.gen or newer, so
	// the second look finds none older: a dial storm that brings newer credentials at
	// every dial does not hold the pass.
	for len(older) > 0 {
		waitAll(ctx, older)
		for _, f := range older {
			switch {
			case isDone(f.done):
			case f.dial:
				pending = append(pending, f) // still dialling as ctx ended
			default:
				behind = append(behind, f)
			}
		}
		if len(pending) > 0 || len(behind) > 0 {
			break
		}
		again, ok := r.stale(l.gen)
		if !ok {
			break
		}
		r.launch(again.start)
		wait = appendNew(wait, again.wait)
		older = again.older
	}
	waitAll(ctx, wait)
	var errs []error
	for _, f := range wait {
		// Looked at once ctx has ended too: a select on both would count a flight
		// already landed as pending, at random, and lose its refusal.
		if isDone(f.done) {
			errs = append(errs, f.err)
		} else {
			pending = append(pending, f)
		}
	}
	return pending, behind, errors.Join(errs...)
}

// appendNew appends to flights those of more it does not hold yet.
func appendNew(flights, more []*reauthFlight) []*reauthFlight {
	seen := make(map[*reauthFlight]bool, len(flights))
	for _, f := range flights {
		seen[f] = true
	}
	for _, f := range more {
		if !seen[f] {
			seen[f] = true
			flights = append(flights, f)
		}
	}
	return flights
}

// launch runs a pass's re-authentications, each on a goroutine of its own.
func (r *credentialRotation) launch(flights []*reauthFlight) {
	for _, f := range flights {
		go r.reauthOne(f)
	}
}

// waitAll waits for every flight to end, or for ctx to end.
func waitAll(ctx context.Context, flights []*reauthFlight) {
	for _, f := range flights {
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
}

// reauthOne re-authenticates f's connection with its credentials, for a pass.
func (r *credentialRotation) reauthOne(f *reauthFlight) {
	defer r.reauths.Done()
	err := f.cn.Reauth(r.ctx, f.cr)
	if errors.Is(err, conn.ErrReauthPubSub) || isDone(f.cn.Done()) || r.ctx.Err() != nil {
		err = nil
	}
	r.land(f, err)
}

// land ends flight f with err. When it ends after the credentials changed again (a
// later pass skipped the connection, busy), it wakes the schedule to re-authenticate
// it with the newest; a refusal, which the pass that started it may no longer be
// waiting for, has the schedule retry it.
func (r *credentialRotation) land(f *reauthFlight, err error) {
	f.err = err
	r.mu.Lock()
	delete(r.inflight, f.cn)
	behind := !r.closed && !sameCredentials(f.cr, r.cur)
	r.mu.Unlock()
	close(f.done)
	if behind {
		signal(r.wake)
	}
	if err != nil {
		signal(r.late)
	}
}

// start starts the goroutine that renews the credentials on their schedule; close
// stops it.
func (r *credentialRotation) start() {
	if r == nil {
		return
	}
	r.loop.Add(1)
	go r.run()
}

func (r *credentialRotation) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.loop.Wait()
	r.reauths.Wait()
}

// run renews the credentials when due, and re-authenticates the connections when a
// dial or Reauthenticate brought new ones. After a provider failure it asks again with
// a backoff; after refusals it re-authenticates the refused connections (the stale
// ones) with a backoff, while the renewal stays due at its own time.
func (r *credentialRotation) run() {
	defer r.loop.Done()
	var retry time.Duration // the wait before the next attempt after a failure; 0 after a success
	askAgain := false       // the failure was the provider's: the retry asks it again
	for {
		var refresh, again <-chan time.Time
		var timers []*time.Timer
		if wait, ok := r.untilRefresh(); ok && !askAgain {
			t := time.NewTimer(wait)
			refresh, timers = t.C, append(timers, t)
		}
		if retry > 0 {
			t := time.NewTimer(retry)
			again, timers = t.C, append(timers, t)
		}
		ask, pass := false, true
		select {
		case <-r.ctx.Done():
			pass = false
		case <-r.wake:
		case <-r.late:
			// Refused, perhaps after its pass stopped waiting: retried in any case.
			pass = false
			retry = max(retry, retryFirst)
		case <-refresh:
			ask = true
		case <-again:
			select {
			case <-refresh: // due at the same time: the renewal goes first
				ask = true
			default:
				ask = askAgain
			}
		}
		for _, t := range timers {
			t.Stop()
		}
		if r.ctx.Err() != nil {
			return
		}
		if !pass {
			continue
		}
		var err error
		same := false // the provider gave back the credentials already due
		if ask {
			err = r.fetch(r.ctx, false)
			same = err == nil && r.due()
		}
		if err == nil {
			wait := reauthWait
			if due, ok := r.untilRefresh(); ok {
				wait = min(wait, due) // the renewal is not held up
			}
			ctx, cancel := context.WithTimeout(r.ctx, wait)
			_, _, err = r.reauthAll(ctx)
			cancel()
		}
		switch {
		case r.ctx.Err() != nil:
			retry, askAgain = 0, false
		case same:
			// A provider that caches its token hands out the same one until close to
			// its end: asked again with the backoff, not at every refreshWaitMin.
			// Never past the token's end, though: halfway to it at most.
			askAgain = true
			retry = min(max(2*retry, retryFirst), retryMax, max(r.untilExpiry()/2, refreshWaitMin))
		case err == nil:
			retry, askAgain = 0, false
		default:
			askAgain = errors.Is(err, conn.ErrCredentials)
			retry = min(max(2*retry, retryFirst), retryMax)
		}
	}
}

// untilExpiry is the time left before the newest credentials end (negative once they
// have; large for credentials that do not expire).
func (r *credentialRotation) untilExpiry() time.Duration {
	r.mu.Lock()
	end := r.cur.ExpiresAt
	r.mu.Unlock()
	if end.IsZero() {
		return retryMax * 2
	}
	return time.Until(end)
}

// due reports whether the newest credentials are due for renewal now.
func (r *credentialRotation) due() bool {
	r.mu.Lock()
	at := r.refreshAt
	r.mu.Unlock()
	return !at.IsZero() && !time.Now().Before(at)
}

// untilRefresh is the wait until the newest credentials are due for renewal, and
// false when they never are.
func (r *credentialRotation) untilRefresh() (time.Duration, bool) {
	r.mu.Lock()
	at := r.refreshAt
	r.mu.Unlock()
	if at.IsZero() {
		return 0, false
	}
	return max(time.Until(at), refreshWaitMin), true
}

// signal sends a token on a channel of capacity one without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Reauthenticate asks Options.Credentials now and re-authenticates every live
// connection of the client (shared, dedicated, tracking, subscription) with what it
// returns, each in order with its traffic and never inside a transaction; the
// schedule then follows the new credentials' ExpiresAt. It returns once every
// connection has answered, and every dial in progress as it began has ended (each
// such connection is authenticated with the new credentials before it is handed out),
// or ctx has ended, with the provider's error (matching conn.ErrCredentials) or the
// connections' errors joined. A connection still busy with an older re-authentication
// is waited for and then re-authenticated with the new credentials. Connections not
// yet authenticated with them as ctx ends (their AUTH still waiting behind a blocking
// command or a transaction, or behind an older re-authentication, or their dial not
// yet done) make the error match ErrReauthPending: they follow once their AUTH has
// gone. RESP2 subscriptions, which the server does not let re-authenticate, keep
// their credentials until they reconnect. Without Options.Credentials it returns
// ErrInvalidOptions.
func (c *Client) Reauthenticate(ctx context.Context) error {
	if c.creds == nil {
		return fmt.Errorf("%w: Reauthenticate without Options.Credentials", ErrInvalidOptions)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return c.creds.rotate(ctx)
}
