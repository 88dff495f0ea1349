package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// names returns n names made of prefix, the number and suffix.
func names(prefix string, n int, suffix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i) + suffix
	}
	return out
}

// TestSubscriptionResubscribeSlowLargeSet loses the connection of a subscription to
// 3,000 channels, which the server confirms one every millisecond: the resubscription
// takes 3s, longer than DialTimeout (2s here), but each of its commands (1,000
// channels, 1s) takes less, so the first reconnection subscribes, and delivers on the
// first and the last channel. When DialTimeout bounded the attempt as a whole, every
// attempt was cut off after 2s and the next started from nothing: the subscription
// never came back.
func TestSubscriptionResubscribeSlowLargeSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Dial 0 is the client's shared connection, dial 1 the subscription's, dial 2
		// its reconnection.
		f := &fakePubSub{confirmEach: time.Millisecond}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{"10.0.0.1:6379"}, Dialer: f.dial, SubscriptionHealthCheck: -1, DialTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer f.wg.Wait()
		defer c.Close()
		channels := names("news.", 3000, "")
		sub, err := c.Subscribe(context.Background(), channels...)
		if err != nil {
			t.Fatal(err)
		}
		f.conn(1).Close()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(f.gaps(1)); got != 1 {
			t.Fatalf("%d reconnection attempts in a minute, want 1", got)
		}
		for _, ch := range []string{channels[0], channels[len(channels)-1]} {
			f.publish(t, 2, ch, "hello")
			if m := receive(t, sub); m.Channel != ch || m.Payload != "hello" {
				t.Fatalf("got %+v, want hello on %s", m, ch)
			}
		}
		if r := sub.Refused(); len(r) != 0 {
			t.Errorf("Refused() = %v, want none", r)
		}
	})
}

// TestSubscriptionLargeSetSurvivesKill subscribes to 20,000 channels and 2,500
// patterns on a real server, sent in commands of at most 1,000 names, and kills the
// connection (CLIENT KILL TYPE pubsub): the subscription reconnects once, subscribes
// to all of them again, and delivers on the first and last channel and pattern, in
// RESP2 and RESP3.
func TestSubscriptionLargeSetSurvivesKill(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{SubscriptionHealthCheck: -1}, func(t *testing.T, c *respire.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		waitNoSubscriber(t, srv)
		channels := names("big.", 20000, "")
		patterns := names("pat.", 2500, ".*")
		sub, err := c.Subscribe(ctx, channels...)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if err := sub.PSubscribe(ctx, patterns...); err != nil {
			t.Fatal(err)
		}
		wantAll := func() bool {
			return srv.Do(t, "PUBSUB", "NUMSUB", channels[len(channels)-1]) == channels[len(channels)-1]+"\n1" &&
				srv.Do(t, "PUBSUB", "NUMPAT") == strconv.Itoa(len(patterns))
		}
		if !wantAll() {
			t.Fatal("the server does not have the whole set before the kill")
		}
		before := clientIDs(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub"))
		srv.Do(t, "CONFIG", "RESETSTAT")
		srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
		testkit.WaitFor(t, "the whole set subscribed on a new connection", func() bool {
			ids := clientIDs(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub"))
			return ids != "" && ids != before && wantAll()
		})
		// The resubscription's commands, at most 1,000 names each.
		stats := srv.Do(t, "INFO", "commandstats")
		for cmd, want := range map[string]int{"subscribe": 20, "psubscribe": 3} {
			if got := commandCalls(stats, cmd); got != want {
				t.Errorf("%d %s commands resubscribed, want %d", got, strings.ToUpper(cmd), want)
			}
		}
		publishReceived(t, srv, sub, channels[0], channels[len(channels)-1])
		for _, p := range []string{patterns[0], patterns[len(patterns)-1]} {
			ch := p[:len(p)-1] + "x"
			srv.Do(t, "PUBLISH", ch, "pattern")
			if m := receive(t, sub); m.Pattern != p || m.Channel != ch || m.Payload != "pattern" {
				t.Fatalf("got %+v, want pattern on %s through %s", m, ch, p)
			}
		}
		if after := clientIDs(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub")); len(after) == 0 || after == before {
			t.Errorf("subscription connections %q after the kill, want one new", after)
		}
		if r := sub.Refused(); len(r) != 0 {
			t.Errorf("Refused() = %v, want none", r)
		}
	})
}

// TestSubscriptionRefusedLargeSet asks a first Subscribe, PSubscribe and SSubscribe
// for 2,500 allowed names and a refused one (ACL channel rules; a pattern is allowed
// only when the rules name it as it is), more than one command carries: each fails
// with NOPERM as when one command carried them all, and leaves no subscriber
// connection behind, in RESP2 and RESP3.
func TestSubscriptionRefusedLargeSet(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	largePatterns := append(names("pat.", 2500, ""), "denied")
	rules := []string{"ACL", "SETUSER", "limited", "on", ">pw", "resetchannels", "&allowed*", "&pp.*", "+@all", "~*"}
	for _, p := range largePatterns[:len(largePatterns)-1] {
		rules = append(rules, "&"+p)
	}
	srv.Do(t, rules...)
	forEachProtocol(t, srv, respire.Options{Username: "limited", Password: "pw", SubscriptionHealthCheck: -1}, func(t *testing.T, c *respire.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		large := append(names("allowed.", 2500, ""), "denied")
		wantNoPerm := func(what string, err error) {
			t.Helper()
			if !resp.HasCode(err, "NOPERM") {
				t.Errorf("%s: %v, want NOPERM", what, err)
			}
		}
		for name, subscribe := range map[string]func() (*respire.Subscription, error){
			"Subscribe":  func() (*respire.Subscription, error) { return c.Subscribe(ctx, large...) },
			"PSubscribe": func() (*respire.Subscription, error) { return c.PSubscribe(ctx, largePatterns...) },
			"SSubscribe": func() (*respire.Subscription, error) { return c.SSubscribe(ctx, large...) },
		} {
			sub, err := subscribe()
			if err == nil {
				sub.Close()
			}
			wantNoPerm(name+" of a large set with a refused name", err)
		}
		waitNoSubscriber(t, srv)
	})
}

// commandCalls returns the calls INFO commandstats reports for cmd (lower case).
func commandCalls(stats, cmd string) int {
	for line := range strings.Lines(stats) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		calls, err := strconv.Atoi(n)
		if err == nil {
			return calls
		}
	}
	return 0
}

// waitNoSubscriber waits until srv has no subscriber connection, such as one a
// subtest before closed.
func waitNoSubscriber(t *testing.T, srv *testserver.Server) {
	t.Helper()
	testkit.WaitFor(t, "no subscriber connection", func() bool {
		return clientIDs(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub")) == ""
	})
}
