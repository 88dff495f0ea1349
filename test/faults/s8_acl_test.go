package faults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/history"
	"github.com/respire/respire/test/testserver"
)

// s8 runs the steps of S8 against one server whose user "app" loses its permissions
// between steps. Each step is an operation of the history; a violation is a denied step
// read as anything but a denial: busy, released, owned or not owned.
type s8 struct {
	t   *testing.T
	srv *testserver.Server
	rec *history.Recorder
	fig *figure
}

// allow gives app every command on every key; deny takes the keys away (and with them
// every command and script that names a key), or the commands in rules.
func (s *s8) allow() {
	s.srv.Do(s.t, "ACL", "SETUSER", "app", "reset", "on", ">pw", "+@all", "~*", "&*")
}

func (s *s8) deny(rules ...string) {
	s.allow()
	if len(rules) == 0 {
		rules = []string{"resetkeys", "~unrelated:*"}
	}
	s.srv.Do(s.t, append([]string{"ACL", "SETUSER", "app"}, rules...)...)
	s.fig.faults++
}

// judge records a denied step: err must be the server's NOPERM, and misread, what the
// caller would have believed had it trusted the result, must be empty.
func (s *s8) judge(step string, err error, misread string) {
	s.t.Helper()
	call := s.rec.Begin(0, step, nil)
	s.fig.ops++
	switch {
	case misread != "":
		call.End(history.OK, misread, err)
		s.fig.check([]history.Violation{{Checker: "S8 denial", Detail: fmt.Sprintf("%s: read as %s (%v)", step, misread, err)}})
	case !resp.HasCode(err, "NOPERM"):
		call.End(history.Unknown, nil, err)
		s.fig.check([]history.Violation{{Checker: "S8 denial", Detail: fmt.Sprintf("%s: %v, want NOPERM", step, err)}})
	default:
		call.End(history.Failed, nil, err)
	}
}

// unchanged checks, as the admin, that a denied step left key as it was.
func (s *s8) unchanged(step, key, want string) {
	s.t.Helper()
	if got := s.srv.Do(s.t, "GET", key); got != want {
		s.fig.check([]history.Violation{{Checker: "S8 nothing changed", Detail: fmt.Sprintf("%s: %s is %q, was %q", step, key, got, want)}})
	}
}

// TestS8ACLDenial denies each step of the locks, the coordination primitives and client
// tracking in turn. Every denial must surface as NOPERM and change nothing.
func TestS8ACLDenial(t *testing.T) {
	fig, _ := newFigure(t, "S8")
	srv := testserver.Start(t, testserver.Config{})
	s := &s8{t: t, srv: srv, rec: history.NewRecorder(), fig: fig}
	s.allow()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := testclient.At(t, srv.Addr(), respire.Options{Username: "app", Password: "pw"})
	locks, co := lock.New(c), coordination.New(c)

	// Acquisition, plain and by every coordination primitive: never "busy".
	s.deny()
	_, ok, err := locks.TryAcquire(ctx, "s8:lock", time.Minute)
	s.judge("lock acquire", err, misreadIf(ok || err == nil || errors.Is(err, lock.ErrNotAcquired), "busy or held"))
	_, err = locks.Acquire(ctx, "s8:lock", time.Minute, lock.WithWait(50*time.Millisecond))
	s.judge("lock acquire with wait", err, misreadIf(err == nil || errors.Is(err, lock.ErrNotAcquired), "busy or held"))
	_, ok, err = co.TryAcquireFencedLock(ctx, "{s8}:lease", "{s8}:fence", time.Minute)
	s.judge("fenced acquire", err, misreadIf(ok || err == nil, "busy or held"))
	_, ok, err = co.Semaphore("s8:sem", 2).TryAcquire(ctx, time.Minute)
	s.judge("semaphore acquire", err, misreadIf(ok || err == nil, "busy or held"))
	_, ok, err = co.TryAcquireWriteLock(ctx, "s8:rw", time.Minute)
	s.judge("write lease acquire", err, misreadIf(ok || err == nil, "busy or held"))
	_, ok, err = co.TryAcquireReadLock(ctx, "s8:rw", time.Minute)
	s.judge("read lease acquire", err, misreadIf(ok || err == nil, "busy or held"))

	// The fence alone denied: the lease may be taken, the counter not; the script takes
	// nothing.
	s.deny("resetkeys", "~{s8}:lease")
	_, ok, err = co.TryAcquireFencedLock(ctx, "{s8}:lease", "{s8}:fence", time.Minute)
	s.judge("fenced acquire, fence denied", err, misreadIf(ok || err == nil, "busy or held"))
	if srv.Do(t, "EXISTS", "{s8}:lease") != "0" {
		fig.check([]history.Violation{{Checker: "S8 nothing changed", Detail: "a fenced acquisition denied its fence left the lease taken"}})
	}

	// Renewal, verification and release of a held lock.
	s.allow()
	mu, err := locks.Acquire(ctx, "s8:lock", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held, _ := mu.Token().Text()
	s.deny()
	ok, err = mu.ResetExpiry(ctx, time.Hour)
	s.judge("lock renew", err, misreadIf(ok || err == nil || errors.Is(err, lock.ErrLeaseLost), "renewed or lost"))
	ok, err = mu.VerifyStillHeld(ctx)
	s.judge("lock verify", err, misreadIf(err == nil, map[bool]string{true: "owned", false: "not owned"}[ok]))
	out, err := mu.Release(ctx)
	s.judge("lock release", err, misreadIf(out == lock.Released || out == lock.AlreadyReleased || err == nil, "released: "+out.String()))
	s.unchanged("lock release", "s8:lock", held)
	owner, ok, err := locks.OwnerToken(ctx, "s8:lock")
	s.judge("lock owner", err, misreadIf(err == nil, fmt.Sprintf("owner %v %v", owner, ok)))

	// A keep-alive denied its renewals does not go on claiming the lock past its lease,
	// and does not say it was released.
	s.allow()
	short, err := locks.Acquire(ctx, "s8:short", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := short.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.deny()
	select {
	case <-ka.Done():
		cause := context.Cause(ka.Context())
		s.fig.ops++
		if errors.Is(cause, lock.ErrReleased) {
			fig.check([]history.Violation{{Checker: "S8 denial", Detail: fmt.Sprintf("keep-alive denied ended as released: %v", cause)}})
		}
		t.Logf("keep-alive denied its renewals ended: %v", cause)
	case <-time.After(30 * time.Second):
		fig.check([]history.Violation{{Checker: "S8 denial", Detail: "keep-alive denied its renewals still claims the lock 30s after a 500ms lease"}})
	}
	ka.Stop()

	// The fenced resource: a write denied is not a stale token.
	s.allow()
	res, err := co.Resource("{s8r}:data", "{s8r}:accepted")
	if err != nil {
		t.Fatal(err)
	}
	s.deny()
	_, err = res.Write(ctx, 7, "SET", "{s8r}:data", "x")
	s.judge("fenced write", err, misreadIf(err == nil || errors.Is(err, coordination.ErrStaleToken), "accepted or stale"))

	// Tracking: a client whose CLIENT TRACKING is refused never serves a cached read
	// that can go stale.
	s.allow()
	srv.Do(t, "SET", "s8:cached", "v1")
	s.deny("-client|tracking")
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	defer tcancel()
	tc, err := respire.NewClient(tctx, respire.Options{Addrs: []string{srv.Addr()}, Username: "app", Password: "pw",
		ClientSideCache: &cache.Options{}})
	if err == nil {
		defer tc.Close()
		v1, err1 := tc.DoCached(tctx, time.Minute, "GET", "s8:cached")
		srv.Do(t, "SET", "s8:cached", "v2")
		v2, err2 := tc.DoCached(tctx, time.Minute, "GET", "s8:cached")
		got1, _ := v1.Text()
		got2, _ := v2.Text()
		t.Logf("cached reads with tracking denied: %q %v, then %q %v", got1, err1, got2, err2)
		s.fig.ops += 2
		if err2 == nil && got2 != "v2" {
			fig.check([]history.Violation{{Checker: "S8 tracking", Detail: fmt.Sprintf("a cached read served %q after the key became v2, tracking denied", got2)}})
		}
		if err1 != nil || err2 != nil {
			s.judge("cached read", errors.Join(err1, err2), "")
		}
		// A fenced waiter needs the invalidations tracking would bring: it must say so,
		// not sleep until its context ends.
		srv.Do(t, "SET", "{s8w}:lease", "someone-else", "PX", "60000")
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = coordination.New(tc).AcquireFencedLock(wctx, "{s8w}:lease", "{s8w}:fence", time.Minute)
		wcancel()
		s.fig.ops++
		t.Logf("fenced wait with tracking denied: %v", err)
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			fig.check([]history.Violation{{Checker: "S8 tracking", Detail: fmt.Sprintf("a fenced waiter without tracking: %v", err)}})
		}
	} else {
		s.judge("connect with tracking", err, "")
	}
	t.Logf("%d denied steps", len(s.rec.Ops()))
	fig.report(t)
}

// misreadIf returns what, when cond holds, a denied step would be misread as.
func misreadIf(cond bool, as string) string {
	if cond {
		return as
	}
	return ""
}
