package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// S2: the server is killed (SIGKILL) and restarted on the same port while a
// fenced lock is held with a keep-alive and writes flow. Without persistence
// the lease and the fence counter are gone: the keep-alive must end with a
// loss as its cause, and tokens may repeat (coordination's "Limitations: the
// counter's history"; counted, not failed). With appendfsync always, nothing
// acknowledged is lost: tokens never repeat, and no acknowledged write is
// missing after the restart.
func TestS2Restart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		durable bool
	}{
		{"no-persistence", nil, false},
		{"aof-always", []string{"--appendonly", "yes", "--appendfsync", "always"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { s2Restart(t, tc.args, tc.durable) })
	}
}

const (
	s2Lease = "{s2}:lease"
	s2Fence = "{s2}:fence"
	s2Log   = "{s2}:log"
	s2TTL   = 2 * time.Second
)

func s2Restart(t *testing.T, args []string, durable bool) {
	fig, rng := newFigure(t, "S2/"+t.Name())
	srv := testserver.Start(t, testserver.Config{Args: args})
	c := testclient.At(t, srv.Addr(), respire.Options{ReadTimeout: time.Second})
	co := coordination.New(c)
	r := history.NewRecorder()
	ctx := context.Background()

	acquire := func() *coordination.FencedLock {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			call := r.Begin(0, "acquire", nil)
			fl, ok, err := co.TryAcquireFencedLock(ctx, s2Lease, s2Fence, s2TTL)
			switch {
			case err == nil && ok:
				call.End(history.OK, fl.FencingToken(), nil)
				return fl
			case err == nil || errors.Is(err, conn.ErrNotSent):
				call.End(history.Failed, nil, err)
			default:
				call.End(history.Unknown, nil, err)
			}
		}
		t.Fatal("no acquisition within 30s")
		return nil
	}

	// A writer adds unique elements throughout, across the kills.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			el := history.Element{Key: s2Log, Value: fmt.Sprintf("w%d", i)}
			call := r.Begin(1, "add", el)
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := c.Do(wctx, "RPUSH", el.Key, el.Value)
			cancel()
			switch {
			case err == nil:
				call.End(history.OK, nil, nil)
			case errors.Is(err, conn.ErrNotSent):
				call.End(history.Failed, nil, err)
				time.Sleep(5 * time.Millisecond) // the server is down: don't spin
			default:
				call.End(history.Unknown, nil, err)
			}
			time.Sleep(time.Millisecond) // a steady stream, not a flood the soak must hold in memory
		}
	})

	causes := map[string]int{}
	rounds := 0
	deadline := time.Now().Add(Budget(2*time.Second, 10*time.Minute))
	for rounds < 2 || time.Now().Before(deadline) {
		rounds++
		fl := acquire()
		ka, err := fl.KeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		srv.Kill(t)
		fig.faults++
		srv.Restart(t)

		if durable {
			// The lease survived: the keep-alive goes on or, if it could not
			// reach the server in time, says the lease is over.
			select {
			case <-ka.Done():
				fig.check(s2Cause(rounds, context.Cause(ka.Context()), causes))
			case <-time.After(s2TTL):
				causes["held"]++
			}
		} else {
			select {
			case <-ka.Done():
				fig.check(s2Cause(rounds, context.Cause(ka.Context()), causes))
			case <-time.After(3 * s2TTL):
				fig.check([]history.Violation{{Checker: "S2", Detail: fmt.Sprintf("round %d: the keep-alive still runs %v after its lease vanished in a restart", rounds, 3*s2TTL)}})
			}
		}
		ka.Stop()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fl.Release(rctx)
		cancel()
	}
	close(stop)
	wg.Wait()

	ops := r.Ops()
	fig.ops = len(ops)
	final := map[string][]string{s2Log: splitLines(srv.Do(t, "LRANGE", s2Log, "0", "-1"))}
	lost := history.CheckNoLostWrites(ops, "add", final)
	repeats := history.CheckTokensIncrease(ops, "acquire")
	if durable {
		fig.check(lost)
		fig.check(repeats)
	}
	t.Logf("rounds %d; acknowledged writes %d, missing after restarts %d; token repeats %d; keep-alive ends %v",
		rounds, history.Count(ops, "add", history.OK), len(lost), len(repeats), causes)
	fig.report(t)
}

// s2Cause checks that a keep-alive ended by a restart says it lost the lease.
func s2Cause(round int, cause error, seen map[string]int) []history.Violation {
	switch {
	case errors.Is(cause, lock.ErrLeaseLost):
		seen["lost"]++
	case errors.Is(cause, lock.ErrLeaseExpired):
		seen["expired"]++
	case errors.Is(cause, lock.ErrOwnershipUncertain):
		seen["uncertain"]++
	case resp.IsLoading(cause):
		// A keep-alive retries LOADING while the lease lasts (bbd3d21): giving
		// up on it is a violation now.
		return []history.Violation{{Checker: "S2", Detail: fmt.Sprintf("round %d: the keep-alive gave up on LOADING: %v", round, cause)}}
	case errors.As(cause, new(*resp.ServerError)):
		// Another error reply of the renewal's own, a documented cause.
		seen["renewal error"]++
	default:
		return []history.Violation{{Checker: "S2", Detail: fmt.Sprintf("round %d: the keep-alive ended with %v, not a loss", round, cause)}}
	}
	return nil
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
