package respire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/backoff"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Message is one published message a Subscription received.
type Message struct {
	Channel string
	Pattern string // the matching pattern, for PSubscribe subscriptions
	Payload string
}

// Subscription receives messages of the channels and patterns it subscribed to, on a
// connection of its own. When that connection is lost (server restart, CLIENT KILL),
// the subscription reconnects with backoff and subscribes again to everything it had;
// messages published while it was away are lost, as with any Redis pub/sub. A PING
// every Options.SubscriptionHealthCheck, unanswered for as long again, counts as such
// a loss, so a connection that silently stops delivering is replaced. In a reconnection
// attempt the dial and handshake are bounded by Options.DialTimeout, and so is each
// command of the resubscription on its own (a large set goes as several commands of
// at most 1,000 names): a server that takes the connection but never confirms costs a
// failed attempt, retried with backoff, while one that confirms each command within
// DialTimeout is not cut off however large the set.
//
// A channel or pattern the server refuses (-NOPERM under ACL channel rules) fails the
// call that asked for it with the server's *resp.ServerError and is not kept; the
// subscription's other channels are untouched. One refused when the subscription
// subscribes again after a reconnect (the user's ACL changed meanwhile) is dropped, the
// others are kept on the new connection, and Refused reports it.
//
// Overflow policy: Messages has a fixed capacity (Options.SubscriptionBuffer). When the
// reader falls behind and it is full, new messages are dropped, never blocking the
// connection, and counted by Dropped.
type Subscription struct {
	client  *Client
	msgs    chan Message
	dropped atomic.Uint64
	ctx     context.Context
	cancel  context.CancelFunc
	done    sync.WaitGroup
	closing sync.Once

	mu       sync.Mutex // held while the sets change and while (re)subscribing
	channels []string   // shard channels, for a shard subscription
	patterns []string
	cn       *conn.Conn
	refused  []*RefusedChannelError // the names resubscriptions dropped, oldest first

	// A shard subscription (SSubscribe) is on the node that serves its channels' slot.
	// When the slot moves the server unsubscribes it (a sunsubscribe push it did not
	// ask for); the push handler notes the channel in unsubscribed and wakes run, which
	// resubscribes where the slot is now.
	shard        bool
	slot         int
	resub        chan struct{}
	pushMu       sync.Mutex
	unsubscribed []string
}

// Subscribe subscribes to channels on a new connection and returns the subscription.
// It fails with ErrClosed once the client is closing.
// ctx bounds only the subscribing (the dial, sending SUBSCRIBE and waiting for the
// server to confirm it), not the subscription's life: it lives on, reconnecting after a
// lost connection, until Subscription.Close or Client.Close ends it and closes its
// Messages channel. Options.DialTimeout bounds the dial and handshake, but the wait for
// the confirmations is the caller's: with a ctx without deadline, a server (or proxy)
// that never confirms keeps Subscribe waiting until ctx ends or Client.Close.
func (c *Client) Subscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return c.subscribe(ctx, channels, nil)
}

// PSubscribe subscribes to glob patterns on a new connection and returns the
// subscription. As for Subscribe, ctx bounds only the subscribing.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) (*Subscription, error) {
	return c.subscribe(ctx, nil, patterns)
}

// SSubscribe subscribes to shard channels (sharded pub/sub, Redis 7.0+: SSUBSCRIBE,
// published with SPUBLISH) on a new connection and returns the subscription. A shard
// channel lives in a hash slot like a key: on a Cluster every channel of the
// subscription must hash to one slot (ErrCrossSlot otherwise; use a {hash tag}), the
// subscription connects to the node that serves it, and when the slot moves to another
// node it follows, resubscribing there. Add and remove channels with
// Subscription.SSubscribe and SUnsubscribe. Messages published while it moves are
// lost, as with any Redis pub/sub. As for Subscribe, ctx bounds only the subscribing.
func (c *Client) SSubscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return c.newSubscription(ctx, channels, nil, true)
}

func (c *Client) subscribe(ctx context.Context, channels, patterns []string) (*Subscription, error) {
	return c.newSubscription(ctx, channels, patterns, false)
}

func (c *Client) newSubscription(ctx context.Context, channels, patterns []string, shard bool) (*Subscription, error) {
	if err := checkNames(channels, patterns); err != nil {
		return nil, err
	}
	s := &Subscription{client: c, msgs: make(chan Message, c.opts.SubscriptionBuffer), shard: shard, slot: route.AnySlot, resub: make(chan struct{}, 1)}
	if shard {
		var err error
		if s.slot, err = channelSlot(c.route, route.AnySlot, channels); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.channels = slices.Clone(channels)
	s.patterns = slices.Clone(patterns)
	// Registered before it dials, under the lock Close reads the set with, so Close
	// either finds it (and waits for it, through done) or has already refused it.
	s.done.Add(1)
	c.subsMu.Lock()
	if c.closed.Load() {
		c.subsMu.Unlock()
		s.cancel()
		return nil, ErrClosed
	}
	c.subs[s] = struct{}{}
	c.subsMu.Unlock()
	if err := s.firstConnect(ctx); err != nil {
		s.done.Done()
		s.Close()
		return nil, err
	}
	go s.run()
	return s, nil
}

// RefusedChannelError is a channel or pattern that a Subscription dropped because the
// server refused it (-NOPERM under ACL channel rules) when the subscription subscribed
// again after a reconnect. Its text names the channel or pattern.
type RefusedChannelError struct {
	Name    string // the channel, shard channel or pattern
	Pattern bool   // whether Name is a pattern (PSubscribe)
	Err     error  // the server's refusal, a *resp.ServerError (errors.As)
}

// Error names the channel or pattern and quotes the server's refusal.
func (e *RefusedChannelError) Error() string {
	what := "channel"
	if e.Pattern {
		what = "pattern"
	}
	return fmt.Sprintf("respire: subscription dropped %s %q refused by the server: %v", what, e.Name, e.Err)
}

// Unwrap returns the server's refusal.
func (e *RefusedChannelError) Unwrap() error { return e.Err }

// firstConnect connects for newSubscription, giving up with ErrClosed when the
// subscription is closed (by Client.Close) meanwhile. A shard subscription told MOVED
// learns the topology again and tries the slot's new owner, a few times at most.
func (s *Subscription) firstConnect(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.ctx, stop)()
	for attempt := 1; ; attempt++ {
		err := s.connect(ctx, false)
		if s.ctx.Err() != nil {
			if err == nil {
				s.cn.Close()
			}
			return ErrClosed
		}
		if !s.shard || !isMoved(err) || attempt == maxMovedResubscribes {
			return err
		}
		if err := s.client.route.Resolve(ctx); err != nil {
			return err
		}
	}
}

// maxMovedResubscribes bounds the MOVED replies a new shard subscription follows: a
// slot moves once in a while, not on every look.
const maxMovedResubscribes = 3

// isMoved reports whether err is a MOVED reply: a shard subscription sent to a node
// that no longer serves its slot.
func isMoved(err error) bool {
	se, ok := resp.AsServerError(err)
	if !ok {
		return false
	}
	r, ok := se.Redirect()
	return ok && !r.Ask
}

func checkNames(channels, patterns []string) error {
	if len(channels)+len(patterns) == 0 {
		return fmt.Errorf("%w: no channel or pattern", ErrInvalidArg)
	}
	for _, n := range append(slices.Clone(channels), patterns...) {
		if n == "" {
			return fmt.Errorf("%w: empty channel or pattern", ErrInvalidArg)
		}
	}
	return nil
}

// channelSlot returns the slot r routes shard channels by, which must all share slot
// unless it is route.AnySlot (as it stays where slots do not route).
func channelSlot(r *route.Router, slot int, channels []string) (int, error) {
	for _, ch := range channels {
		s := r.KeySlot("", ch)
		switch {
		case s == route.AnySlot:
		case slot == route.AnySlot:
			slot = s
		case s != slot:
			return route.AnySlot, fmt.Errorf("%w: shard channels of one subscription hash to slots %d and %d", ErrCrossSlot, slot, s)
		}
	}
	return slot, nil
}

// connect opens a connection and subscribes it to the current sets. Each SUBSCRIBE
// waits for its confirmations, so a channel the server refuses (-NOPERM under ACL
// channel rules) fails connect with the server's error rather than the connection.
// Subscribing again (run, after a lost connection) is different: the caller who asked
// for the names is gone, so the refused names are dropped and reported (Refused, the
// Observer) and the others kept, rather than failing the whole set again on every
// reconnect. Subscribing again is also bounded step by step rather than by ctx alone:
// the dial and handshake by DialTimeout, and each SUBSCRIBE's confirmations by
// DialTimeout of their own (see reconnect).
func (s *Subscription) connect(ctx context.Context, again bool) error {
	var p subscribing
	dialCtx := ctx
	if again {
		p.refused = new([]*RefusedChannelError)
		p.bound = s.client.opts.DialTimeout
		if p.bound == 0 {
			p.bound = conn.DefaultDialTimeout
		}
		var cancel context.CancelFunc
		dialCtx, cancel = context.WithTimeout(ctx, p.bound)
		defer cancel()
	}
	cn, err := s.client.route.Dial(dialCtx, route.Slot(s.slot), func(o *conn.Options) { o.PushHandler = s.onPush; o.ReadTimeout = -1 })
	if err != nil {
		return err
	}
	cn.SetPubSubMode(true)
	p.cn = cn
	refused, err := s.subscribeAll(ctx, p)
	if err != nil {
		cn.Close()
		return err
	}
	// Reported once the lock is released, so that an Observer may look at Refused.
	if obs := s.client.obs; obs != nil {
		for _, r := range refused {
			obs.Conn(observe.Conn{Kind: observe.ConnSubscriptionRefused, Addr: cn.Addr(), Err: r})
		}
	}
	return nil
}

// subscribeAll subscribes p's connection to the current sets and makes it the
// subscription's connection, under the lock the sets change with. When p keeps the
// names refused alone, it drops them from the sets and returns them.
func (s *Subscription) subscribeAll(ctx context.Context, p subscribing) ([]*RefusedChannelError, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	subscribe := "SUBSCRIBE"
	if s.shard {
		subscribe = "SSUBSCRIBE"
	}
	var err error
	if len(s.channels) > 0 {
		err = p.subscribe(ctx, subscribe, s.channels)
	}
	if err == nil && len(s.patterns) > 0 {
		err = p.subscribe(ctx, "PSUBSCRIBE", s.patterns)
	}
	if err != nil {
		return nil, err
	}
	s.cn = p.cn
	var refused []*RefusedChannelError
	if p.refused != nil {
		refused = *p.refused
	}
	for _, r := range refused {
		set := &s.channels
		if r.Pattern {
			set = &s.patterns
		}
		*set = slices.DeleteFunc(*set, func(n string) bool { return n == r.Name })
	}
	s.refused = append(s.refused, refused...)
	return refused, nil
}

// subscribeChunk is the most names one SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE carries; a
// larger set goes as several commands, one after the other. The server confirms each
// name with a push of its own, so a command of 1,000 names is some tens of kilobytes
// each way and well under a millisecond of the server's time: its round trip stays
// well inside DialTimeout, which bounds each command of a resubscription, on any link
// a subscription is usable over, however large the set (100,000 names are 100 round
// trips). The bound is per command, not per confirmation: a link that needs longer
// than DialTimeout for 1,000 confirmations fails every attempt, as one that cannot
// complete a handshake in time does. It also keeps the halving that narrows down a
// refusal to about 2·log2(1000), some 20 round trips per refused name, and a single
// command's size well below the server's query buffer limit.
const subscribeChunk = 1000

// subscribing is one pass of subscribing a connection to names. The first Subscribe
// and an addition to a subscription leave bound and refused zero: the caller's ctx
// alone bounds the wait, and a refusal fails the pass. The resubscription after a
// reconnect sets both.
type subscribing struct {
	cn *conn.Conn
	// bound, when positive, bounds each command's wait for its confirmations on its
	// own, so that the whole pass may take as long as the set needs.
	bound time.Duration
	// refused, when not nil, receives each name the server refuses alone (NOPERM),
	// narrowed down by halving, and the pass goes on with the others.
	refused *[]*RefusedChannelError
}

// subscribe subscribes to names with cmd, in commands of at most subscribeChunk
// names. On an error the commands before the failed one stay subscribed: its callers
// close the connection then.
func (p subscribing) subscribe(ctx context.Context, cmd string, names []string) error {
	for chunk := range slices.Chunk(names, subscribeChunk) {
		if err := p.narrow(ctx, cmd, chunk); err != nil {
			return err
		}
	}
	return nil
}

// narrow subscribes to names with one command. When p keeps refused names, a refusal
// (NOPERM) is narrowed down by halving: the server refuses a command whole when it
// refuses one of its names, so the names are sent again in halves, and each name
// refused alone is added to p.refused instead of failing the call. A few refused names
// among n cost about 2·log2(n) round trips each, not n.
func (p subscribing) narrow(ctx context.Context, cmd string, names []string) error {
	err := p.once(ctx, cmd, names)
	if p.refused == nil || !resp.HasCode(err, "NOPERM") {
		return err
	}
	if len(names) == 1 {
		*p.refused = append(*p.refused, &RefusedChannelError{Name: names[0], Pattern: cmd == "PSUBSCRIBE", Err: err})
		return nil
	}
	half := len(names) / 2
	if err := p.narrow(ctx, cmd, names[:half]); err != nil {
		return err
	}
	return p.narrow(ctx, cmd, names[half:])
}

// once sends cmd (SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE) for names and waits for the
// server's confirmation of each name, or its refusal of all of them.
func (p subscribing) once(ctx context.Context, cmd string, names []string) error {
	if p.bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.bound)
		defer cancel()
	}
	return p.cn.DoConfirmed(ctx, strings.ToLower(cmd), len(names), append([]any{cmd}, anys(names)...)...)
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// run owns the subscription's connection: it waits for it to fail, or to fail its
// health check, and reconnects. A connection that did not last (refused, killed at
// once, or failing its health check) counts as a failed attempt, so a server that
// keeps dropping the subscription is retried ever more slowly, never in a loop.
func (s *Subscription) run() {
	defer s.done.Done()
	tries := 0 // reconnections since a connection last lasted reconnectStable
	for {
		s.mu.Lock()
		cn := s.cn
		s.mu.Unlock()
		up := time.Now()
		s.watch(cn)
		cn.Close()
		if s.ctx.Err() != nil {
			return
		}
		if time.Since(up) >= reconnectStable {
			tries = 0
		}
		for {
			if tries > 0 && !s.pause(reconnectDelay(tries)) {
				return
			}
			tries++
			if s.shard {
				// The slot has moved, or the node has gone: learn where it is now.
				ctx, cancel := context.WithTimeout(s.ctx, route.FetchTimeout)
				s.client.route.Resolve(ctx)
				cancel()
			}
			if s.reconnect() == nil {
				break
			}
			if s.ctx.Err() != nil {
				return
			}
		}
	}
}

// reconnect makes one attempt at a new connection subscribed to the current sets. The
// dial and handshake are bounded by Options.DialTimeout, and so is each command of the
// resubscription (each at most subscribeChunk names, each halving step of a refusal)
// on its own: a server or proxy that takes the connection but never confirms a
// SUBSCRIBE costs one failed attempt, retried with backoff, and does not hang the
// subscription until Close; while a server that confirms each command in time, for a
// large set or many refused names to narrow down, is not cut off part way, for the
// next attempt to start again from nothing and never come back. The subscription's
// lock is held throughout, so a Subscribe, Unsubscribe or Refused call on it waits for
// the resubscription as long as its commands keep being confirmed in time.
// DialTimeout rather than ReadTimeout: the resubscription is the last step of making
// the connection ready, as the handshake is, and DialTimeout is the bound go-redis
// (DialTimeout) and rueidis (Dialer.Timeout) users know for establishing a
// connection; it is also always finite, where ReadTimeout and SubscriptionHealthCheck
// may be -1.
func (s *Subscription) reconnect() error { return s.connect(s.ctx, true) }

// watch returns when cn must be replaced (it broke, failed its health check, or lost a
// shard channel to a slot move) or the subscription is closed.
func (s *Subscription) watch(cn *conn.Conn) {
	var tick <-chan time.Time
	every := s.client.opts.SubscriptionHealthCheck
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-cn.Done():
			return
		case <-s.resub:
			if s.lostChannel() {
				return
			}
		case <-tick:
			// PING is answered in subscriber mode too, in order behind the
			// messages: no answer within the interval means nothing arrives.
			ctx, cancel := context.WithTimeout(s.ctx, every)
			err := cn.DoConfirmed(ctx, "pong", 1, "PING")
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// pause waits d, and reports false if the subscription was closed meanwhile.
func (s *Subscription) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reconnection backoff: the n-th consecutive attempt waits between half and all of
// reconnectBase·2^(n-1), capped at reconnectMax; the random half spreads the
// subscriptions of many clients that lost one server. A connection that lasts
// reconnectStable resets the count.
const (
	reconnectBase   = 50 * time.Millisecond
	reconnectMax    = 5 * time.Second
	reconnectStable = 2 * reconnectMax
)

// reconnectDelay is the wait before reconnection attempt n (from 1).
func reconnectDelay(n int) time.Duration { return backoff.Equal(reconnectBase, reconnectMax, n) }

// lostChannel reports whether a sunsubscribe the server sent was for a shard channel
// the subscription still wants (or whether the server refused a subscription).
func (s *Subscription) lostChannel() bool {
	s.pushMu.Lock()
	names := s.unsubscribed
	s.unsubscribed = nil
	s.pushMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if n == "" || slices.Contains(s.channels, n) {
			return true
		}
	}
	return false
}

// noteUnsubscribed records a channel the server unsubscribed ("" for a refusal, such
// as MOVED to a subscription sent to the wrong node) and wakes run.
func (s *Subscription) noteUnsubscribed(channel string) {
	s.pushMu.Lock()
	s.unsubscribed = append(s.unsubscribed, channel)
	s.pushMu.Unlock()
	select {
	case s.resub <- struct{}{}:
	default:
	}
}

// onPush runs on the connection's reader goroutine.
func (s *Subscription) onPush(v resp.Value) {
	if s.shard && v.Err() != nil {
		// RESP2 subscriber mode hands every frame here, errors included.
		s.noteUnsubscribed("")
		return
	}
	elems, err := v.Array()
	if err != nil || len(elems) < 3 {
		return
	}
	kind, _ := elems[0].Text()
	var m Message
	switch {
	case kind == "sunsubscribe" && s.shard:
		ch, _ := elems[1].Text()
		s.noteUnsubscribed(ch)
		return
	case (kind == "message" || kind == "smessage") && len(elems) == 3:
		m.Channel, _ = elems[1].Text()
		m.Payload, _ = elems[2].Text()
	case kind == "pmessage" && len(elems) == 4:
		m.Pattern, _ = elems[1].Text()
		m.Channel, _ = elems[2].Text()
		m.Payload, _ = elems[3].Text()
	default:
		return // subscription confirmations and pongs
	}
	select {
	case s.msgs <- m:
	default:
		s.dropped.Add(1)
	}
}

// Messages returns the channel of received messages. It is closed by Close.
func (s *Subscription) Messages() <-chan Message { return s.msgs }

// Dropped returns how many messages were dropped because Messages was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Refused returns the channels and patterns the subscription dropped because the
// server refused them when it subscribed again after a reconnect (the user's ACL
// changed meanwhile, or a name added just before the connection broke was one the
// user may not use), oldest first; each is also reported to the Observer
// (observe.ConnSubscriptionRefused). A name refused to the call that asked for it is
// not listed: that call returned the refusal. The subscription does not subscribe to
// a dropped name again unless asked to.
func (s *Subscription) Refused() []*RefusedChannelError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

// Subscribe adds channels to the subscription.
func (s *Subscription) Subscribe(ctx context.Context, channels ...string) error {
	if s.shard {
		return fmt.Errorf("%w: a shard subscription takes shard channels (SSubscribe)", ErrInvalidArg)
	}
	return s.change(ctx, "SUBSCRIBE", channels, &s.channels, true)
}

// Unsubscribe removes channels; with none, it removes every channel.
func (s *Subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	if s.shard {
		return fmt.Errorf("%w: a shard subscription takes shard channels (SUnsubscribe)", ErrInvalidArg)
	}
	return s.change(ctx, "UNSUBSCRIBE", channels, &s.channels, false)
}

// SSubscribe adds shard channels to a subscription made by Client.SSubscribe. On a
// Cluster they must hash to the subscription's slot (ErrCrossSlot otherwise).
func (s *Subscription) SSubscribe(ctx context.Context, channels ...string) error {
	if !s.shard {
		return fmt.Errorf("%w: SSubscribe on a subscription of plain channels; use Client.SSubscribe", ErrInvalidArg)
	}
	if _, err := channelSlot(s.client.route, s.slot, channels); err != nil {
		return err
	}
	return s.change(ctx, "SSUBSCRIBE", channels, &s.channels, true)
}

// SUnsubscribe removes shard channels; with none, it removes every one.
func (s *Subscription) SUnsubscribe(ctx context.Context, channels ...string) error {
	if !s.shard {
		return fmt.Errorf("%w: SUnsubscribe on a subscription of plain channels", ErrInvalidArg)
	}
	return s.change(ctx, "SUNSUBSCRIBE", channels, &s.channels, false)
}

// PSubscribe adds patterns to the subscription.
func (s *Subscription) PSubscribe(ctx context.Context, patterns ...string) error {
	if s.shard {
		return fmt.Errorf("%w: a shard subscription has no patterns", ErrInvalidArg)
	}
	return s.change(ctx, "PSUBSCRIBE", patterns, &s.patterns, true)
}

// PUnsubscribe removes patterns; with none, it removes every pattern.
func (s *Subscription) PUnsubscribe(ctx context.Context, patterns ...string) error {
	return s.change(ctx, "PUNSUBSCRIBE", patterns, &s.patterns, false)
}

// change updates a set and tells the server, under the lock a reconnect takes, so a
// change is never lost between a reconnect's resubscription and the old connection.
func (s *Subscription) change(ctx context.Context, cmd string, names []string, set *[]string, add bool) error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	if add && len(names) == 0 {
		return fmt.Errorf("%w: no channel or pattern", ErrInvalidArg)
	}
	if slices.Contains(names, "") {
		return fmt.Errorf("%w: empty channel or pattern", ErrInvalidArg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		return s.addLocked(ctx, cmd, names, set)
	}
	if len(names) == 0 {
		*set = nil
	} else {
		*set = withoutNames(*set, names)
	}
	err := s.cn.Send(ctx, append([]any{cmd}, anys(names)...)...)
	var ce *conn.CallError
	if errors.As(err, &ce) && ctx.Err() == nil {
		return nil // the connection is gone; the reconnect applies the new sets
	}
	return err
}

// addLocked subscribes to names with cmd and adds them to set once the server has
// confirmed them, so a refused name (NOPERM) is reported and never subscribed again by
// a reconnect, and the names already in set are untouched.
func (s *Subscription) addLocked(ctx context.Context, cmd string, names []string, set *[]string) error {
	err := subscribing{cn: s.cn}.once(ctx, cmd, names)
	var ce *conn.CallError
	switch {
	case err == nil, errors.As(err, &ce) && ctx.Err() == nil:
		// Taken, or the connection is gone and the reconnect subscribes again.
	case s.shard && isMoved(err):
		// The slot has moved: run subscribes to everything again on its new owner.
		s.noteUnsubscribed("")
	default:
		return err
	}
	*set = withNames(*set, names)
	return nil
}

// withNames returns set with the names of names it lacks appended, each once, in
// their order. Sets run to tens of thousands of names (a resubscription sends them
// in chunks), so membership is looked up in a map rather than by scanning set once
// per name, a pass quadratic in the set's size under the subscription's lock.
func withNames(set, names []string) []string {
	have := make(map[string]struct{}, len(set)+len(names))
	for _, n := range set {
		have[n] = struct{}{}
	}
	for _, n := range names {
		if _, ok := have[n]; !ok {
			have[n] = struct{}{}
			set = append(set, n)
		}
	}
	return set
}

// withoutNames returns set without the names of names, in place, keeping the order
// of the rest; as withNames, one map lookup per member.
func withoutNames(set, names []string) []string {
	drop := make(map[string]struct{}, len(names))
	for _, n := range names {
		drop[n] = struct{}{}
	}
	return slices.DeleteFunc(set, func(n string) bool {
		_, ok := drop[n]
		return ok
	})
}

// Close unsubscribes by closing the connection, stops reconnecting and closes Messages.
func (s *Subscription) Close() error {
	s.closing.Do(func() {
		s.cancel()
		s.done.Wait()
		close(s.msgs)
		s.client.subsMu.Lock()
		delete(s.client.subs, s)
		s.client.subsMu.Unlock()
	})
	return nil
}
