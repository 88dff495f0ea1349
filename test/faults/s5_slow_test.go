package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S5: slow and blackholed connections. Promised: no acquisition is reported
// once its validity has run out (slow replies eat the lease); a reply that
// never comes is noticed within ReadTimeout; and the caller's context always
// wins, whatever the client's own timeouts say.

// s5Slack is the scheduling allowance on every "within" bound below: the
// bounds are promises of the API, not speed figures, and two shared cores
// under the race detector can delay any goroutine by a few hundred ms.
const s5Slack = time.Second

// TestS5SlowAcquisitionsNeverStale runs each kind of lock against replies
// slowed by up to twice the lease: an acquisition reported ok must have
// validity left when it returns.
func TestS5SlowAcquisitionsNeverStale(t *testing.T) {
	for _, kind := range []string{"redlock", "lock", "fenced"} {
		t.Run(kind, func(t *testing.T) {
			s5Validity(t, kind)
		})
	}
}

func s5Validity(t *testing.T, kind string) {
	fig, rng := newFigure(t, "S5/validity/"+kind)
	const ttl = 100 * time.Millisecond
	var proxies []*faultproxy.Proxy
	var clients []*respire.Client
	for range 3 {
		srv := testserver.Start(t, testserver.Config{})
		p := faultproxy.Start(t, srv.Addr())
		proxies = append(proxies, p)
		clients = append(clients, testclient.At(t, p.Addr(), respire.Options{}))
	}
	locks := lock.New(clients[0])
	co := coordination.New(clients[0])
	group, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: 2 * ttl})
	if err != nil {
		t.Fatal(err)
	}
	acquire := func(ctx context.Context, key string) (bool, time.Duration, error) {
		switch kind {
		case "lock":
			m, ok, err := locks.TryAcquire(ctx, key, ttl)
			if !ok {
				return ok, 0, err
			}
			return ok, m.RemainingEstimate(), err
		case "fenced":
			fl, ok, err := co.TryAcquireFencedLock(ctx, "{"+key+"}:lease", "{"+key+"}:fence", ttl)
			if !ok {
				return ok, 0, err
			}
			return ok, fl.RemainingEstimate(), err
		}
		rl, ok, err := group.TryAcquire(ctx, key, ttl)
		if !ok {
			return ok, 0, err
		}
		return ok, rl.RemainingEstimate(), err
	}
	r := history.NewRecorder()
	deadline := time.Now().Add(Budget(2*time.Second, 10*time.Minute))
	for i := 0; i < 10 || time.Now().Before(deadline); i++ {
		// Replies slowed by up to twice the lease, differently per node.
		for _, p := range proxies {
			p.SetLatency(faultproxy.ToClient, time.Duration(rng.Int64N(int64(2*ttl))))
		}
		fig.faults++
		key := fmt.Sprintf("s5:%d", i)
		call := r.Begin(0, "acquire", key)
		ok, left, err := acquire(context.Background(), key)
		switch {
		case err != nil:
			call.End(history.Unknown, nil, err)
		case !ok:
			call.End(history.Failed, nil, nil)
		default:
			call.End(history.OK, left, nil)
			if left <= 0 {
				fig.check([]history.Violation{{Checker: "S5", Detail: fmt.Sprintf("%s %s reported acquired with %v of validity left", kind, key, left)}})
			}
		}
	}
	ops := r.Ops()
	fig.ops = len(ops)
	t.Logf("acquired with validity left: %d of %d attempts", history.Count(ops, "acquire", history.OK), fig.faults)
	fig.report(t)
}

func TestS5TimeoutsAndContextWin(t *testing.T) {
	fig, rng := newFigure(t, "S5/timeouts")
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	const readTimeout = 200 * time.Millisecond
	bounded := testclient.At(t, p.Addr(), respire.Options{ReadTimeout: readTimeout})
	pu := faultproxy.Start(t, srv.Addr())
	unbounded := testclient.At(t, pu.Addr(), respire.Options{ReadTimeout: -1})
	r := history.NewRecorder()
	violate := func(format string, args ...any) {
		fig.check([]history.Violation{{Checker: "S5", Detail: fmt.Sprintf(format, args...)}})
	}
	deadline := time.Now().Add(Budget(3*time.Second, 10*time.Minute))
	for i := 0; i < 6 || time.Now().Before(deadline); i++ {
		// Make sure both clients are connected before the fault, so the
		// command is written and its reply is what goes missing.
		p.Heal()
		pu.Heal()
		for _, c := range []*respire.Client{bounded, unbounded} {
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := c.Do(pctx, "PING")
			cancel()
			if err != nil {
				t.Fatalf("ping after heal: %v", err)
			}
		}
		// Replies held back (and delivered on heal) for the client without a
		// ReadTimeout, which must recover once they come: a blackhole would
		// lose them for good, which only ReadTimeout (or TCP) can end. The
		// bounded client gets either.
		pu.Pause(faultproxy.ToClient)
		if rng.IntN(2) == 0 {
			p.Blackhole(faultproxy.ToClient)
		} else {
			p.Pause(faultproxy.ToClient)
		}
		fig.faults += 2

		// ReadTimeout bounds the wait for a reply once written.
		call := r.Begin(0, "read-timeout", i)
		start := time.Now()
		_, err := bounded.Do(context.Background(), "SET", fmt.Sprintf("s5:t%d", i), "v")
		took := time.Since(start)
		call.End(history.Unknown, took, err)
		if !errors.Is(err, conn.ErrOutcomeUnknown) {
			violate("a write whose reply never came returned %v, not an unknown outcome", err)
		}
		if took > readTimeout+s5Slack {
			violate("a reply missing for %v was noticed after %v with ReadTimeout %v", took, took, readTimeout)
		}

		// The caller's deadline wins over no ReadTimeout at all, for a plain
		// command and for each kind of lock.
		wait := time.Duration(10+rng.IntN(100)) * time.Millisecond
		for _, step := range []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"do", func(ctx context.Context) error { _, err := unbounded.Do(ctx, "GET", "s5:x"); return err }},
			{"lock", func(ctx context.Context) error {
				_, err := lock.New(unbounded).Acquire(ctx, "s5:lock", time.Second, lock.WithWait(time.Minute))
				return err
			}},
			{"fenced", func(ctx context.Context) error {
				_, _, err := coordination.New(unbounded).TryAcquireFencedLock(ctx, "{s5}:lease", "{s5}:fence", time.Second)
				return err
			}},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			call := r.Begin(1, "ctx-"+step.name, wait)
			start := time.Now()
			err := step.run(ctx)
			took := time.Since(start)
			cancel()
			call.End(history.Unknown, took, err)
			if !errors.Is(err, context.DeadlineExceeded) {
				violate("%s under a %v deadline returned %v, not the context's error", step.name, wait, err)
			}
			if took > wait+s5Slack {
				violate("%s under a %v deadline returned after %v", step.name, wait, took)
			}
		}
	}
	fig.ops = len(r.Ops())
	fig.report(t)
}
