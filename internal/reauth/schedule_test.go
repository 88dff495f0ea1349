package reauth

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
)

// TestCredentialSchedule follows the schedule through a script: renewal at
// ExpiresAt − max(10% of the life, 1 s), retries with a doubling backoff after
// provider failures (each reported), none for credentials without expiry; dead
// connections are dropped, a RESP2 subscription's refusal is no failure.
func TestCredentialSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		errDown := errors.New("token service down")
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second}, // the dial: renewed at 90 s
			{user: "tok-2", life: 10 * time.Second},  // at 90 s: renewed 1 s before its end, at 99 s
			{err: errDown},                           // at 99 s
			{err: errDown},                           // at 99.25 s
			{user: "tok-3"},                          // at 99.75 s: never expires
		}}
		rec := &testkit.ConnEvents{Kind: observe.ConnReauth}
		r := newRotation(p.provide, rec)
		ctx := context.Background()
		tok1, err := r.ForDial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		live := newFakeConn(tok1, start)
		dead := newFakeConn(tok1, start)
		close(dead.done)
		sub := newFakeConn(tok1, start)
		sub.err = conn.ErrReauthPubSub
		for _, cn := range []*fakeConn{live, dead, sub} {
			if err := r.Register(ctx, cn); err != nil {
				t.Fatal(err)
			}
		}
		r.Start()
		defer r.Close()

		time.Sleep(time.Hour)
		synctest.Wait()
		wantAsked := []time.Duration{0, 90 * time.Second, 99 * time.Second, 99250 * time.Millisecond, 99750 * time.Millisecond}
		if !slices.Equal(p.asked, wantAsked) {
			t.Errorf("provider asked at %v, want %v", p.asked, wantAsked)
		}
		if got, want := live.log(), []string{"tok-2@1m30s", "tok-3@1m39.75s"}; !slices.Equal(got, want) {
			t.Errorf("live connection re-authenticated %v, want %v", got, want)
		}
		if got := dead.log(); len(got) != 0 {
			t.Errorf("dead connection re-authenticated %v", got)
		}
		// Refused at each renewal, and not retried in between.
		if got, want := sub.log(), []string{"tok-2@1m30s", "tok-3@1m39.75s"}; !slices.Equal(got, want) {
			t.Errorf("RESP2 subscription asked %v, want %v", got, want)
		}
		if errs := rec.Errs(); len(errs) != 2 || !errors.Is(errs[0], errDown) || !errors.Is(errs[1], conn.ErrCredentials) {
			t.Errorf("reported %v, want the two provider failures", errs)
		}
	})
}

// TestCredentialsSlowReauth: a connection whose AUTH waits (behind a blocking command)
// is left to finish in the background, is not sent another meanwhile, and holds up
// neither the schedule nor the other connections.
func TestCredentialsSlowReauth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s: renewed at 180 s
			{user: "tok-3"},
		}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		tok1, _ := r.ForDial(ctx)
		slow := newFakeConn(tok1, start)
		slow.block = make(chan struct{})
		quick := newFakeConn(tok1, start)
		flaky := newFakeConn(tok1, start) // its failure makes a second pass, after the first waited 5 s for slow
		flaky.err, flaky.failOnce = errors.New("refused once"), true
		r.Register(ctx, slow)
		r.Register(ctx, quick)
		r.Register(ctx, flaky)
		r.Start()
		defer r.Close()

		time.Sleep(120 * time.Second)
		synctest.Wait()
		if got := quick.log(); !slices.Equal(got, []string{"tok-2@1m30s"}) {
			t.Errorf("quick connection at 120 s: %v, want tok-2 at 90 s", got)
		}
		if got, want := flaky.log(), []string{"tok-2@1m30s", "tok-2@1m35.25s"}; !slices.Equal(got, want) {
			t.Errorf("flaky connection at 120 s: %v, want %v", got, want)
		}
		close(slow.block) // the blocking command ahead of the AUTH returns
		synctest.Wait()
		if !slow.AuthenticatedWith(Credentials{Username: "tok-2", Password: "tok-2-pass", ExpiresAt: start.Add(190 * time.Second)}) {
			t.Error("the slow AUTH did not complete")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-3@3m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v: once per rotation", got, want)
		}
		if want := []time.Duration{0, 90 * time.Second, 180 * time.Second}; !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
	})
}

// TestCredentialsRefusingConnKeepsRenewal: a connection that keeps refusing the newest
// credentials is retried alone; the renewal stays due at its time, and the others
// follow it.
func TestCredentialsRefusingConnKeepsRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s: due at 180 s
			{user: "tok-3", life: 100 * time.Second}, // at 180 s: due at 270 s
			{user: "tok-4"},                          // at 270 s
		}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		tok1, _ := r.ForDial(ctx)
		bad := newFakeConn(tok1, start) // say, a node whose ACL lacks the new users
		bad.err = errors.New("WRONGPASS")
		good := newFakeConn(tok1, start)
		r.Register(ctx, bad)
		r.Register(ctx, good)
		r.Start()
		defer r.Close()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if want := []time.Duration{0, 90 * time.Second, 180 * time.Second, 270 * time.Second}; !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
		if got, want := good.log(), []string{"tok-2@1m30s", "tok-3@3m0s", "tok-4@4m30s"}; !slices.Equal(got, want) {
			t.Errorf("good connection re-authenticated %v, want %v", got, want)
		}
		if got := bad.log(); len(got) < 10 || got[1] != "tok-2@1m30.25s" {
			t.Errorf("refusing connection retried %v, want a retry 250 ms after each refusal, backing off", got)
		}
	})
}

// TestCredentialsReauthenticateKeepsSchedule: a Reauthenticate waiting (without a
// deadline) for a connection whose AUTH is stuck behind a blocking command holds up
// neither the schedule nor the other connections.
func TestCredentialsReauthenticateKeepsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1"},
			{user: "tok-2", life: 3 * time.Second}, // Reauthenticate at once; due at 2 s
			{user: "tok-3"},                        // the schedule at 2 s
		}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		slow, quick := slowAndQuick(t, r, start)
		r.Start()
		defer r.Close()
		rotated := make(chan error, 1)
		go func() { rotated <- r.Rotate(ctx) }() // Client.Reauthenticate(context.Background())
		time.Sleep(time.Minute)
		synctest.Wait()
		// The schedule's own pass waits for slow until the renewal is due (2 s), then
		// the renewal comes after the schedule's 250 ms floor: before tok-2 ends at 3 s.
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@2.25s"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
		close(slow.block)
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the slow AUTH went through: %v", err)
		}
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsLateRefusalRetried: a refusal that comes after its pass stopped
// waiting is retried, with the same backoff.
func TestCredentialsLateRefusalRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2"}, // at 90 s
		}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		tok1, _ := r.ForDial(ctx)
		slow := newFakeConn(tok1, start)
		slow.block = make(chan struct{})
		slow.err, slow.failOnce = errors.New("WRONGPASS"), true
		r.Register(ctx, slow)
		r.Start()
		defer r.Close()
		time.Sleep(120 * time.Second)
		close(slow.block) // refused at 120 s, 25 s after the pass stopped waiting
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-2@2m0.25s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsComparedByContent: a dial given the credentials the rotation has
// already neither wakes the schedule nor moves the renewal.
func TestCredentialsComparedByContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cr := Credentials{Username: "u", Password: "p", ExpiresAt: time.Now().Add(100 * time.Second)}
		r := newRotation(func(context.Context) (Credentials, error) { return cr, nil }, nil)
		ctx := context.Background()
		r.ForDial(ctx)
		<-r.wake
		due := r.refreshAt
		time.Sleep(50 * time.Second)
		r.ForDial(ctx)
		if len(r.wake) != 0 || !r.refreshAt.Equal(due) {
			t.Errorf("the same credentials again: woke %v, renewal moved from %v to %v", len(r.wake) != 0, due, r.refreshAt)
		}
		cr.Password = "p2"
		r.ForDial(ctx)
		if len(r.wake) != 1 {
			t.Error("new credentials did not wake the schedule")
		}
	})
}

// TestCredentialsSameTokenBacksOff: a provider that caches its token and hands out the
// same one past its renewal time is asked again with the backoff (250 ms doubling to
// 5 s), not every 250 ms, but never later than halfway to the token's end, so that the
// new token it gives at 98 s is in use before the old one ends at 100 s.
func TestCredentialsSameTokenBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var asked []time.Duration
		provide := func(context.Context) (Credentials, error) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Since(start)
			asked = append(asked, now)
			if now < 98*time.Second {
				return Credentials{Username: "tok-1", Password: "p1", ExpiresAt: start.Add(100 * time.Second)}, nil
			}
			return Credentials{Username: "tok-2", Password: "p2"}, nil
		}
		r := newRotation(provide, nil)
		live := startWithOne(t, r, start)
		defer r.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Due at 90 s; the same token at 90, 90.25, 90.75, 91.75, 93.75 (+4 s), 96.875
		// (+3.125 s, half the 6.25 s left), 98.4375 (half of 3.125 s): the new one.
		want := []time.Duration{0, 90 * time.Second, 90250 * time.Millisecond, 90750 * time.Millisecond, 91750 * time.Millisecond, 93750 * time.Millisecond, 96875 * time.Millisecond, 98437500 * time.Microsecond}
		if !slices.Equal(asked, want) {
			t.Errorf("provider asked at %v, want %v", asked, want)
		}
		if got, want := live.log(), []string{"tok-2@1m38.4375s"}; !slices.Equal(got, want) {
			t.Errorf("connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsScheduleNoPassword: on the schedule a provider that gives no password
// is a provider failure: reported to the observer each time (which the client's Logger
// writes a line of: TestLogObserverLines, TestCredentialsNoPasswordLive), asked again
// with the failure backoff (250 ms doubling), and the connections keep their
// credentials until it gives a password again.
func TestCredentialsScheduleNoPassword(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 10 * time.Second}, // the dial: renewed at 9 s
			{user: "tok-2", noPassword: true},       // at 9 s
			{user: "tok-2", noPassword: true},       // at 9.25 s
			{user: "tok-2", noPassword: true},       // at 9.75 s
			{user: "tok-2", noPassword: true},       // at 10.75 s
			{user: "tok-2"},                         // at 12.75 s
		}}
		rec := &testkit.ConnEvents{Kind: observe.ConnReauth}
		r := newRotation(p.provide, rec)
		live := startWithOne(t, r, start)
		defer r.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []time.Duration{0, 9 * time.Second, 9250 * time.Millisecond, 9750 * time.Millisecond, 10750 * time.Millisecond, 12750 * time.Millisecond}
		if !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
		if errs := rec.Matching(conn.ErrCredentials); len(errs) != 4 {
			t.Errorf("reported %v; want the 4 asks without a password, each", errs)
		}
		if got, want := live.log(), []string{"tok-2@12.75s"}; !slices.Equal(got, want) {
			t.Errorf("connection re-authenticated %v, want %v", got, want)
		}
	})
}
