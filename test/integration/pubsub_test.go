package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/backoff"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// TestSubscriptionRefusedChannel subscribes as a user whose ACL allows only the
// channels allowed*: each refused SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE, new or added to
// a subscription, returns NOPERM; the subscription's other channels keep delivering on
// the same connection (no reconnect), in RESP2 and RESP3.
func TestSubscriptionRefusedChannel(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	srv.Do(t, "ACL", "SETUSER", "limited", "on", ">pw", "resetchannels", "&allowed*", "+@all", "~*")
	forEachProtocol(t, srv, respire.Options{Username: "limited", Password: "pw"}, func(t *testing.T, c *respire.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		wantNoPerm := func(what string, err error) {
			t.Helper()
			var se *resp.ServerError
			if !errors.As(err, &se) || se.Code != "NOPERM" {
				t.Errorf("%s: %v, want a NOPERM *resp.ServerError", what, err)
			}
		}
		for name, subscribe := range map[string]func(context.Context, ...string) (*respire.Subscription, error){
			"Subscribe": c.Subscribe, "PSubscribe": c.PSubscribe, "SSubscribe": c.SSubscribe,
		} {
			sub, err := subscribe(ctx, "denied")
			if err == nil {
				sub.Close()
			}
			wantNoPerm(name+" of a refused channel", err)
		}

		sub, err := c.Subscribe(ctx, "allowed.a")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		shard, err := c.SSubscribe(ctx, "allowed.s")
		if err != nil {
			t.Fatal(err)
		}
		defer shard.Close()
		connections := srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub")

		wantNoPerm("sub.Subscribe of a refused channel", sub.Subscribe(ctx, "denied"))
		wantNoPerm("sub.Subscribe of a refused channel beside an allowed one", sub.Subscribe(ctx, "allowed.b", "denied"))
		wantNoPerm("sub.PSubscribe of a refused pattern", sub.PSubscribe(ctx, "denied*"))
		wantNoPerm("shard.SSubscribe of a refused channel", shard.SSubscribe(ctx, "denied"))
		if err := sub.Subscribe(ctx, "allowed.c"); err != nil {
			t.Fatalf("sub.Subscribe of an allowed channel after refusals: %v", err)
		}

		publishReceived(t, srv, sub, "allowed.a", "allowed.c")
		srv.Do(t, "SPUBLISH", "allowed.s", "shard")
		if m := receive(t, shard); m.Channel != "allowed.s" || m.Payload != "shard" {
			t.Fatalf("got %+v, want shard on allowed.s", m)
		}
		if got := srv.Do(t, "PUBSUB", "NUMSUB", "allowed.b"); got != "allowed.b\n0" {
			t.Errorf("PUBSUB NUMSUB allowed.b = %q: the refused SUBSCRIBE subscribed part of it", got)
		}
		if after := srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub"); clientIDs(after) != clientIDs(connections) {
			t.Errorf("subscription connections changed over the refusals:\nbefore %s\nafter  %s", connections, after)
		}
	})
}

// TestSubscriptionResubscribeRefused takes channels away from a subscribed user (ACL
// SETUSER resetchannels): Redis disconnects the subscription, and its resubscription
// of everything it had is refused whole. The subscription keeps the names still
// allowed on its new connection, delivering their messages, and reports the others
// dropped, through Refused and the Observer, in RESP2 and RESP3; a shard subscription
// (SSUBSCRIBE) the same.
func TestSubscriptionResubscribeRefused(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			user := fmt.Sprintf("sub%d", proto)
			srv.Do(t, "ACL", "SETUSER", user, "on", ">pw", "resetchannels", "&a", "&b", "&c", "&d", "&e", "&p.*", "&q.*", "&s1", "&s2", "+@all", "~*")
			obs := &testkit.ConnEvents{Kind: observe.ConnSubscriptionRefused}
			c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto, Username: user, Password: "pw", Observer: obs})
			sub, err := c.Subscribe(ctx, "a", "b", "c", "d", "e")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if err := sub.PSubscribe(ctx, "p.*", "q.*"); err != nil {
				t.Fatal(err)
			}
			shard, err := c.SSubscribe(ctx, "s1", "s2")
			if err != nil {
				t.Fatal(err)
			}
			defer shard.Close()

			srv.Do(t, "ACL", "SETUSER", user, "resetchannels", "&a", "&c", "&e", "&p.*", "&s1")
			// The Observer hears of a refusal after Refused shows it (it is told once the
			// subscription's lock is released, so that it may call Refused): wait for both.
			testkit.WaitFor(t, "b, d, q.* and s2 reported refused", func() bool {
				return len(sub.Refused()) >= 3 && len(shard.Refused()) >= 1 && len(obs.Events()) >= 4
			})
			refused := sub.Refused()
			want := []respire.RefusedChannelError{{Name: "b"}, {Name: "d"}, {Name: "q.*", Pattern: true}}
			for i, r := range refused {
				if i >= len(want) || r.Name != want[i].Name || r.Pattern != want[i].Pattern || !resp.HasCode(r, "NOPERM") {
					t.Errorf("Refused()[%d] = %+v, want %+v with a NOPERM *resp.ServerError", i, r, want)
				}
			}
			shardRefused := shard.Refused()
			if len(shardRefused) != 1 || shardRefused[0].Name != "s2" || shardRefused[0].Pattern || !resp.HasCode(shardRefused[0], "NOPERM") {
				t.Errorf("shard.Refused() = %v, want s2 refused with NOPERM", shardRefused)
			}
			all := append(refused, shardRefused...)
			events := obs.Events()
			if len(events) != len(all) {
				t.Errorf("%d ConnSubscriptionRefused events, want %d", len(events), len(all))
			}
			for i, e := range events {
				var rc *respire.RefusedChannelError
				if !errors.As(e.Err, &rc) || !slices.Contains(all, rc) || e.Addr != srv.Addr() {
					t.Errorf("event %d: %+v, want addr %s and one of Refused()", i, e, srv.Addr())
				}
			}

			connections := srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub")
			publishReceived(t, srv, sub, "a", "c", "e")
			srv.Do(t, "PUBLISH", "p.x", "pattern")
			if m := receive(t, sub); m.Pattern != "p.*" || m.Channel != "p.x" {
				t.Fatalf("got %+v, want a message on p.x through p.*", m)
			}
			srv.Do(t, "SPUBLISH", "s1", "shard")
			if m := receive(t, shard); m.Channel != "s1" || m.Payload != "shard" {
				t.Fatalf("got %+v, want shard on s1", m)
			}
			if after := srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub"); clientIDs(after) != clientIDs(connections) {
				t.Errorf("the subscriptions reconnected after dropping the refused names:\nbefore %s\nafter  %s", connections, after)
			}
		})
	}
}

// publishReceived publishes to each channel in turn and checks that sub receives it.
func publishReceived(t *testing.T, srv *testserver.Server, sub *respire.Subscription, channels ...string) {
	t.Helper()
	for _, ch := range channels {
		srv.Do(t, "PUBLISH", ch, "hello")
		if m := receive(t, sub); m.Channel != ch || m.Payload != "hello" {
			t.Fatalf("got %+v, want hello on %s", m, ch)
		}
	}
}

// receive returns the next message of sub, failing the test if none comes.
func receive(t *testing.T, sub *respire.Subscription) respire.Message {
	t.Helper()
	select {
	case m := <-sub.Messages():
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message delivered")
	}
	return respire.Message{}
}

// clientIDs is the id= fields of a CLIENT LIST reply.
func clientIDs(list string) string {
	var ids []string
	for _, f := range strings.Fields(list) {
		if strings.HasPrefix(f, "id=") {
			ids = append(ids, f)
		}
	}
	return strings.Join(ids, " ")
}

// TestCloseRacingSubscribe closes the client while many Subscribe calls are in flight:
// each returns ErrClosed or a subscription, and once Close has returned the server
// has no subscriber left and publishing reaches nobody.
func TestCloseRacingSubscribe(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto})
			if err != nil {
				t.Fatal(err)
			}
			const n = 230
			var (
				wg      sync.WaitGroup
				started sync.WaitGroup
			)
			errs := make([]error, n)
			subs := make([]*respire.Subscription, n)
			started.Add(n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					started.Done()
					subs[i], errs[i] = c.Subscribe(context.Background(), fmt.Sprintf("race.%d", i))
				}()
			}
			started.Wait()
			c.Close()
			wg.Wait()
			closed := 0
			for i, err := range errs {
				switch {
				case errors.Is(err, respire.ErrClosed):
					closed++
				case err != nil:
					t.Errorf("Subscribe %d: %v, want a subscription or ErrClosed", i, err)
				default:
					select {
					case _, open := <-subs[i].Messages():
						if open {
							t.Errorf("subscription %d delivered a message after Close", i)
						}
					default:
						t.Errorf("subscription %d still open after Close", i)
					}
				}
			}
			t.Logf("%d of %d Subscribe calls returned ErrClosed", closed, n)
			testkit.WaitFor(t, "no subscriber left", func() bool {
				return !strings.Contains(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub"), "id=")
			})
			for i := range n {
				if got := srv.Do(t, "PUBLISH", fmt.Sprintf("race.%d", i), "late"); got != "0" {
					t.Fatalf("PUBLISH race.%d after Close reached %s subscribers", i, got)
				}
			}
		})
	}
}

// fakePubSub is a scripted server for subscription logic under testing/synctest: every
// dial gets a net.Pipe served by a goroutine of its own, which answers HELLO and
// anything else with OK, SUBSCRIBE unless hangUp says to close instead, or unconfirmed
// to leave it unanswered (or with NOPERM when it names the channel deny), confirming
// one channel every confirmEach, and PING unless mute says not. Each serving goroutine
// ends when its pipe is closed.
type fakePubSub struct {
	mu          sync.Mutex
	dials       []time.Time
	conns       []net.Conn                             // the server's end of each connection, in dial order
	confirmEach time.Duration                          // how long the server takes to confirm each channel of a SUBSCRIBE
	hangUp      func(dial int, channels []string) bool // whether the dial-th connection is closed at a SUBSCRIBE of channels
	unconfirmed func(dial int) bool                    // whether the dial-th connection never answers SUBSCRIBE
	deny        string                                 // a channel every SUBSCRIBE naming it is refused for
	mute        func(dial int) bool                    // whether the dial-th connection stops answering after SUBSCRIBE
	wg          sync.WaitGroup
}

func (f *fakePubSub) dial(context.Context, string, string) (net.Conn, error) {
	cli, srv := net.Pipe()
	f.mu.Lock()
	n := len(f.dials)
	f.dials = append(f.dials, time.Now())
	f.conns = append(f.conns, srv)
	f.mu.Unlock()
	f.wg.Add(1)
	go f.serve(n, srv)
	return cli, nil
}

func (f *fakePubSub) serve(n int, nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	rd := resp.NewReader(bufio.NewReader(nc), resp.Limits{})
	subscribed := false
	for {
		v, err := rd.Read()
		if err != nil {
			return
		}
		elems, _ := v.Array()
		args := make([]string, len(elems))
		for i, e := range elems {
			args[i], _ = e.Text()
		}
		var reply string
		switch {
		case subscribed && f.mute != nil && f.mute(n):
			continue // a connection that silently stops delivering
		case args[0] == "HELLO":
			reply = "%3\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n"
		case args[0] == "SUBSCRIBE" && f.hangUp != nil && f.hangUp(n, args[1:]):
			return
		case args[0] == "SUBSCRIBE" && f.unconfirmed != nil && f.unconfirmed(n):
			continue // a server that takes the connection and never confirms
		case args[0] == "SUBSCRIBE" && f.deny != "" && slices.Contains(args[1:], f.deny):
			reply = "-NOPERM this user has no permissions to access one of the channels used as arguments\r\n"
		case args[0] == "SUBSCRIBE" && f.confirmEach > 0:
			// A server that keeps confirming, slowly: one channel at a time.
			for i, ch := range args[1:] {
				time.Sleep(f.confirmEach)
				if _, err := nc.Write([]byte(subscribeConfirmation(ch, i+1))); err != nil {
					return
				}
			}
			subscribed = true
			continue
		case args[0] == "SUBSCRIBE":
			for i, ch := range args[1:] {
				reply += subscribeConfirmation(ch, i+1)
			}
			subscribed = true
		case args[0] == "PING":
			reply = "+PONG\r\n"
		default:
			reply = "+OK\r\n"
		}
		if _, err := nc.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// subscribeConfirmation is the RESP3 confirmation of a SUBSCRIBE of channel, the count-th
// subscription of its connection.
func subscribeConfirmation(channel string, count int) string {
	return fmt.Sprintf(">3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(channel), channel, count)
}

// conn returns the server's end of the dial-th connection.
func (f *fakePubSub) conn(dial int) net.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns[dial]
}

// publish sends a message on channel to the dial-th connection, as the server does to
// a subscriber of channel.
func (f *fakePubSub) publish(t *testing.T, dial int, channel, payload string) {
	t.Helper()
	m := fmt.Sprintf(">3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(channel), channel, len(payload), payload)
	if _, err := f.conn(dial).Write([]byte(m)); err != nil {
		t.Fatalf("publish on connection %d: %v", dial, err)
	}
}

// gaps returns the time between consecutive dials from the from-th on.
func (f *fakePubSub) gaps(from int) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for i := from + 1; i < len(f.dials); i++ {
		out = append(out, f.dials[i].Sub(f.dials[i-1]))
	}
	return out
}

// TestSubscriptionAddRefusedAfterLoss adds a channel the server refuses just as the
// connection breaks, so its NOPERM never arrives and the call succeeds: the reconnect's
// resubscription is refused for that channel alone, which the subscription drops and
// reports, keeping the others on its new connection and reconnecting no more.
func TestSubscriptionAddRefusedAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Dial 0 is the client's shared connection, dial 1 the subscription's.
		f := &fakePubSub{deny: "denied", hangUp: func(dial int, channels []string) bool {
			return dial == 1 && slices.Contains(channels, "denied")
		}}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: f.dial, SubscriptionHealthCheck: -1})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := c.Subscribe(context.Background(), "news", "sport")
		if err != nil {
			t.Fatal(err)
		}
		if err := sub.Subscribe(context.Background(), "denied"); err != nil {
			t.Fatalf("Subscribe as the connection broke: %v, want nil (the reconnect subscribes)", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		refused := sub.Refused()
		if len(refused) != 1 || refused[0].Name != "denied" || refused[0].Pattern || !resp.HasCode(refused[0], "NOPERM") {
			t.Errorf("Refused() = %v, want denied refused with NOPERM", refused)
		}
		if got := len(f.gaps(1)); got != 1 {
			t.Errorf("%d reconnections, want 1", got)
		}
		c.Close()
		f.wg.Wait()
	})
}

// TestSubscriptionHealthCheck mutes a subscription's connection after its SUBSCRIBE:
// with a health check every 10s, the PING at 10s goes unanswered, and the
// subscription reconnects at 20s, the bound the README gives (twice the interval).
func TestSubscriptionHealthCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakePubSub{mute: func(dial int) bool { return dial == 1 }}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: f.dial, SubscriptionHealthCheck: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Subscribe(context.Background(), "news"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(35 * time.Second) // two more health checks, answered
		c.Close()
		f.wg.Wait()
		if got, want := f.gaps(1), []time.Duration{20 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("reconnections %v apart, want %v", got, want)
		}
	})
}

// TestSubscriptionHealthCheckLive black-holes a subscription's connection through a
// fault proxy: the health check (every 200ms here) notices the silence and the
// subscription dials again, and once the route heals it delivers on its new
// connection.
func TestSubscriptionHealthCheckLive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := testclient.New(t, respire.Options{Addrs: []string{p.Addr()}, Protocol: proto, SubscriptionHealthCheck: 200 * time.Millisecond, DialTimeout: 500 * time.Millisecond})
			sub, err := c.Subscribe(context.Background(), "hc")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			publishUntilHeard(t, srv, sub, "hc", "before")
			accepted := p.Stats().Accepted
			p.Blackhole(faultproxy.Both)
			defer p.Heal()
			testkit.WaitFor(t, "the subscription to dial again", func() bool { return p.Stats().Accepted > accepted })
			p.Heal()
			publishUntilHeard(t, srv, sub, "hc", "after")
		})
	}
}

// TestSubscriptionReconnectUnconfirmed loses a subscription's connection (its health
// check at 10s goes unanswered) to a server that takes the next connection but never
// confirms its SUBSCRIBE: that attempt gives up after DialTimeout (2s here), and the
// next, after the first backoff (50ms, the jitter scripted to its most), subscribes.
// Without the bound the subscription waited for the confirmation until Close.
func TestSubscriptionReconnectUnconfirmed(t *testing.T) {
	defer func(j func(time.Duration) time.Duration) { backoff.Jitter = j }(backoff.Jitter)
	backoff.Jitter = func(n time.Duration) time.Duration { return n }
	synctest.Test(t, func(t *testing.T) {
		// Dial 0 is the client's shared connection, dial 1 the subscription's, dial 2
		// its first reconnection.
		f := &fakePubSub{mute: func(dial int) bool { return dial == 1 }, unconfirmed: func(dial int) bool { return dial == 2 }}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: f.dial, SubscriptionHealthCheck: 10 * time.Second, DialTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Subscribe(context.Background(), "news"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		c.Close()
		f.wg.Wait()
		if got, want := f.gaps(1), []time.Duration{20 * time.Second, 2*time.Second + 50*time.Millisecond}; !slices.Equal(got, want) {
			t.Errorf("reconnections %v apart, want %v", got, want)
		}
	})
}

// TestSubscribeUnconfirmedWaitsForCtx subscribes to a server that never confirms: the
// first Subscribe waits as long as its ctx allows (a minute, well past DialTimeout),
// and with a ctx without deadline until Client.Close, which it returns ErrClosed for.
func TestSubscribeUnconfirmedWaitsForCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakePubSub{unconfirmed: func(dial int) bool { return dial > 0 }}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: f.dial, DialTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if _, err := c.Subscribe(ctx, "news"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Minute {
			t.Errorf("Subscribe = %v after %v, want context.DeadlineExceeded after 1m0s", err, time.Since(start))
		}
		done := make(chan error, 1)
		go func() {
			_, err := c.Subscribe(context.Background(), "news")
			done <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Subscribe without deadline returned %v before Close", err)
		default:
		}
		c.Close()
		if err := <-done; !errors.Is(err, respire.ErrClosed) {
			t.Errorf("Subscribe after Close = %v, want ErrClosed", err)
		}
		f.wg.Wait()
	})
}

// TestSubscriptionReconnectUnconfirmedLive kills a subscription's connection on a real
// server and black-holes, through a fault proxy, the SUBSCRIBE of the connection it
// dials next, once that connection's handshake is done: the attempt gives up after
// DialTimeout (500ms here), the stalled connection is closed, and once the route heals
// the next attempt subscribes and delivers.
func TestSubscriptionReconnectUnconfirmedLive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			var stall atomic.Bool
			onConnect := func(context.Context, *respire.Conn) error {
				if stall.CompareAndSwap(true, false) {
					p.Blackhole(faultproxy.ToServer)
				}
				return nil
			}
			c := testclient.New(t, respire.Options{Addrs: []string{p.Addr()}, Protocol: proto, DialTimeout: 500 * time.Millisecond, SubscriptionHealthCheck: -1, OnConnect: onConnect})
			sub, err := c.Subscribe(context.Background(), "unconfirmed")
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			publishUntilHeard(t, srv, sub, "unconfirmed", "before")
			before := p.Stats()
			stall.Store(true)
			defer p.Heal()
			srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
			testkit.WaitFor(t, "the resubscription to be black-holed", func() bool {
				return !stall.Load() && p.Stats().Dropped > before.Dropped
			})
			p.Heal()
			publishUntilHeard(t, srv, sub, "unconfirmed", "after")
			testkit.WaitFor(t, "the stalled connection to be closed", func() bool {
				s := p.Stats()
				return s.Accepted >= before.Accepted+2 && s.Open == before.Open
			})
		})
	}
}
