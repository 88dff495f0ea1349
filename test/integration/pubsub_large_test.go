package integration

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
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
