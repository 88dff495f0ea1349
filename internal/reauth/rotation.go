package reauth

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

// Credentials are an ACL user and password, and when they stop being valid (zero:
// never). Package respire converts its own Credentials to and from them.
type Credentials struct {
	Username  string
	Password  string
	ExpiresAt time.Time
}

// Conn is what the rotation needs of a connection: a *conn.Conn adapted by package
// respire, a fake in tests. It is a map key, so it must be comparable, and equal for
// the same connection.
type Conn interface {
	// Reauth authenticates the connection with cr, in order with its traffic.
	Reauth(ctx context.Context, cr Credentials) error
	// AuthenticatedWith reports whether the connection's last authentication was
	// with cr's user and password.
	AuthenticatedWith(cr Credentials) bool
	// Done is closed once the connection has broken or closed.
	Done() <-chan struct{}
}

// Options are what a Rotation is made of.
type Options struct {
	// Provider gives the newest credentials; required. Its error, or credentials
	// without a password (conn.ErrNoPassword), fail the ask; Rotate and the schedule
	// report either matching conn.ErrCredentials, as a dial does.
	Provider func(context.Context) (Credentials, error)
	// Observer is given a ConnReauth event for each failure of the provider on the
	// schedule or in Rotate; nil for none.
	Observer observe.Observer
	// Pending is matched by the error of Rotate when connections are not
	// re-authenticated yet as its context ends (the client gives
	// respire.ErrReauthPending); nil for ErrPending.
	Pending error
	// Closed is the error of Rotate once Close has begun (the client gives
	// respire.ErrClosed); nil for ErrClosed.
	Closed error
}

// Rotation keeps a client's connections authenticated with the newest credentials
// its provider gives.
type Rotation struct {
	provide               func(context.Context) (Credentials, error)
	obs                   observe.Observer // nil for none
	errPending, errClosed error            // Options.Pending and Options.Closed

	mu        sync.Mutex
	cur       Credentials // the newest the provider gave
	curSeq    uint64      // the sequence number of the ask that gave cur
	gen       uint64      // how many times cur changed: 1 for the first credentials
	seq       uint64      // asks started
	refreshAt time.Time   // when cur is due for renewal; zero for never
	// passEnd ends the schedule's pass in progress (nil for none): new credentials
	// may be due before the pass's own deadline, computed from the ones before.
	passEnd  context.CancelFunc
	conns    map[Conn]struct{}
	pruneAt  int                    // the registry size at which dead connections are next dropped
	inflight map[Conn]*reauthFlight // connections being re-authenticated
	// dials are the dials in progress, by the sequence number of their ask: the Done
	// channel of the dial's context, which conn.Dial ends as it returns.
	dials      map[uint64]<-chan struct{}
	dialsPrune int  // the size of dials at which ended dials are next dropped
	closed     bool // Close has begun: no more re-authentications start

	wake    chan struct{}   // the credentials changed outside the schedule: look again
	late    chan struct{}   // a re-authentication was refused: retry it
	ctx     context.Context // ends when the Rotation closes
	cancel  context.CancelFunc
	loop    sync.WaitGroup // the schedule's goroutine
	reauths sync.WaitGroup // one goroutine per re-authentication running
}

// The errors of a rotation whose Options name none.
var (
	ErrPending = errors.New("reauth: connections not re-authenticated yet")
	ErrClosed  = errors.New("reauth: rotation closed")
)

// New returns the rotation of o.Provider's credentials. Start starts its schedule;
// Close stops it.
func New(o Options) *Rotation {
	if o.Pending == nil {
		o.Pending = ErrPending
	}
	if o.Closed == nil {
		o.Closed = ErrClosed
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Rotation{
		provide:    o.Provider,
		obs:        o.Observer,
		errPending: o.Pending,
		errClosed:  o.Closed,
		conns:      map[Conn]struct{}{},
		inflight:   map[Conn]*reauthFlight{},
		pruneAt:    64,
		dials:      map[uint64]<-chan struct{}{},
		dialsPrune: 64,
		wake:       make(chan struct{}, 1),
		late:       make(chan struct{}, 1),
		ctx:        ctx,
		cancel:     cancel,
	}
}

// ForDial is the provider of the client's dials (conn.Options.Credentials): it asks
// Options.Provider, keeps what it gives as the newest, wakes the schedule when they
// are new, and counts the dial as in progress until ctx ends (conn.Dial ends it as it
// returns), for Rotate. Its error is the provider's, or conn.ErrNoPassword.
func (r *Rotation) ForDial(ctx context.Context) (Credentials, error) {
	return r.ask(ctx, true, true)
}

// ask asks the provider and keeps what it gives if no later ask has given something
// already; no password is an error. With notify, new credentials wake the schedule,
// to re-authenticate the connections and follow their expiry. A dial's ask records the
// dial as in progress until its ctx ends (as conn.Dial returns), for Rotate.
func (r *Rotation) ask(ctx context.Context, notify, dial bool) (Credentials, error) {
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
			if notify && r.passEnd != nil {
				// The wake-up below starts a pass with the new credentials' deadline.
				r.passEnd()
			}
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

// Register adds a connection just dialled (the client's OnConnect hook, after the
// user's); if it was dialled with credentials older than the newest, it is
// re-authenticated before it is handed out, within the dial's ctx. That AUTH is a
// flight like a pass's, recorded in the same critical section that adds the
// connection: a pass finds the connection either authenticated, or in flight (and
// waits for it within its own ctx, never the dial's), so none falls between the two
// and none is sent a second AUTH meanwhile.
func (r *Rotation) Register(ctx context.Context, cn Conn) error {
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
func (r *Rotation) pruneLocked() {
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
func (r *Rotation) stale(gen uint64) (l look, ok bool) {
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
	cn   Conn
	cr   Credentials
	gen  uint64        // cr's generation (Rotation.gen)
	done chan struct{} // closed when it has ended, with err
	err  error         // a refusal or failure; nil for none worth retrying
	dial bool          // the registration of a connection being dialled (Register)
	// dialDone is the Done channel of that dial's context, as recorded in dials.
	dialDone <-chan struct{}
}

// Rotate asks the provider and re-authenticates every connection with what it gives,
// waiting for them until ctx ends, those still busy with an older re-authentication
// included. Connections being dialled as the new credentials come, perhaps with those
// they replace, are waited for too: each either registers before the pass (which
// takes it) or after the new credentials came (and re-authenticates itself with them
// before its dial returns). Each connection is counted once in the error.
func (r *Rotation) Rotate(ctx context.Context) error {
	left, behind, err := r.rotateCounted(ctx)
	if left > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d connections not re-authenticated yet: %w", r.errPending, left, context.Cause(ctx)))
	}
	if behind > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d connections still re-authenticating with older credentials: %w", r.errPending, behind, context.Cause(ctx)))
	}
	return err
}

// rotateCounted is Rotate's work: it returns how many connections were left
// re-authenticating as ctx ended, or dialling, and how many still with older
// credentials, with the provider's or the connections' errors.
func (r *Rotation) rotateCounted(ctx context.Context) (left, behind int, err error) {
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
func (r *Rotation) dialsInProgress() []<-chan struct{} {
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
func (r *Rotation) pruneDialsLocked() {
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
func (r *Rotation) fetch(ctx context.Context, notify bool) error {
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
// a blocking command, say) go on in the background, bounded by the Rotation's life, and
// are returned in pending, not as failures. A connection still re-authenticating with
// older credentials (behind a blocking command or still being dialled) is waited for
// first, and once it is done, re-authenticated with the newest; if ctx ends before,
// it is returned in pending when it is being dialled, in behind otherwise. No lock is
// held while it waits, so passes run side by side, each starting connections of its
// own. A connection that broke meanwhile, or a RESP2 subscription (which the server
// does not let re-authenticate, and which keeps its credentials until it reconnects),
// is no failure either.
func (r *Rotation) reauthAll(ctx context.Context) (pending, behind []*reauthFlight, err error) {
	l, ok := r.stale(0)
	if !ok {
		return nil, nil, r.errClosed
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
func (r *Rotation) launch(flights []*reauthFlight) {
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
func (r *Rotation) reauthOne(f *reauthFlight) {
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
func (r *Rotation) land(f *reauthFlight, err error) {
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
