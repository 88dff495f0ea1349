package lock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/testserver"
)

// holdLockDial makes the next lock connection's handshake wait d: a managed release
// that comes first waits, unsent, for its connection. (The client's shared connection,
// which acquisitions use, is dialled already.)
func holdLockDial(s profileServer, d time.Duration) { s.emu.Delay("HELLO", d) }

// waitState polls the handle's release state until cond holds.
func waitState(t *testing.T, m *Lock, what string, cond func(rs *releaseState) bool) {
	t.Helper()
	testkit.WaitFor(t, what, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return cond(&m.rel)
	})
}

// A joiner never takes another caller's cancellation for its result: the caller that
// sends the release gives up before the delete was sent, and the joiner, whose context
// is live, sends it. Exactly one delete reaches the server.
func TestReleaseJoinerSendsWhenLeaderGivesUp(t *testing.T) {
	s := startProfile(t, emulator.Redis84)
	locks := New(s.client(t, respire.Options{}))
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "joined", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s.emu.Reset()
	holdLockDial(s, 800*time.Millisecond)

	type result struct {
		out ReleaseOutcome
		err error
	}
	leader, joiner := make(chan result, 1), make(chan result, 1)
	lctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	go func() {
		out, err := mu.Release(lctx)
		leader <- result{out, err}
	}()
	waitState(t, mu, "the leader's release", func(rs *releaseState) bool { return rs.running })
	go func() {
		out, err := mu.Release(ctx)
		joiner <- result{out, err}
	}()
	waitState(t, mu, "the joiner", func(rs *releaseState) bool { return rs.waiters != nil })
	// Another joiner gives up on its own: its own cause comes back, the release goes on.
	gaveUp := errors.New("this joiner gave up")
	qctx, quit := context.WithCancelCause(ctx)
	quitter := make(chan error, 1)
	go func() {
		_, err := mu.Release(qctx)
		quitter <- err
	}()
	quit(gaveUp)
	if err := <-quitter; !errors.Is(err, gaveUp) {
		t.Fatalf("a joiner that gave up: %v, want its own cause", err)
	}

	l := <-leader
	if l.out != 0 || !errors.Is(l.err, conn.ErrNotSent) || !errors.Is(l.err, context.DeadlineExceeded) {
		t.Fatalf("leader: %v %v, want its own deadline, not sent", l.out, l.err)
	}
	j := <-joiner
	if j.out != Released || j.err != nil {
		t.Fatalf("joiner: %v %v, want the release it sent itself", j.out, j.err)
	}
	if n := s.emu.Count("DELEX"); n != 1 {
		t.Fatalf("%d deletes sent, want 1", n)
	}
	if s.backend.Do(t, "EXISTS", "joined") != "0" {
		t.Fatal("not released")
	}
	if out, err := mu.Release(ctx); out != AlreadyReleased || err != nil {
		t.Fatalf("release after: %v %v", out, err)
	}
}

// A release that was not sent leaves the lock held and releasable, and the keep-alive
// it stopped says so: ErrKeepAliveStopped, not ErrReleased. The next release then
// releases, and ErrReleased is the cause from then on.
func TestUnsentReleaseLeavesLockHeld(t *testing.T) {
	s := startProfile(t, emulator.Redis84)
	locks := New(s.client(t, respire.Options{}))
	ctx := context.Background()
	mu, ok, err := locks.TryAcquire(ctx, "unsent", time.Minute, WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	kept := mu.KeepAliveContext()
	s.emu.Reset()
	holdLockDial(s, 500*time.Millisecond)
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = mu.Release(tctx)
	cancel()
	if !errors.Is(err, conn.ErrNotSent) {
		t.Fatalf("release: %v, want not sent", err)
	}
	cause := context.Cause(kept)
	if !errors.Is(cause, ErrKeepAliveStopped) || errors.Is(cause, ErrReleased) {
		t.Fatalf("the keep-alive's cause after an unsent release: %v", cause)
	}
	if s.backend.Do(t, "GET", "unsent") != mu.Token().b {
		t.Fatal("the lock is gone")
	}
	if work := mu.KeepAliveContext(); work.Err() != nil {
		t.Fatalf("KeepAliveContext of a held lock ended: %v", context.Cause(work))
	}
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatalf("release again: %v %v", out, err)
	}
	if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrReleased) {
		t.Fatalf("cause after the release: %v", context.Cause(mu.KeepAliveContext()))
	}
	if s.emu.Count("DELEX") != 1 {
		t.Fatalf("%d deletes, want 1", s.emu.Count("DELEX"))
	}
}

// A keep-alive ended by a release that deleted the lock says ErrReleased, by the time
// Release returns.
func TestReleaseEndsKeepAliveWithReleased(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	mu, ok, err := locks.TryAcquire(ctx, "kr", time.Minute, WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	kept := mu.KeepAliveContext()
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatal(out, err)
	}
	if !errors.Is(context.Cause(kept), ErrReleased) {
		t.Fatalf("cause %v", context.Cause(kept))
	}
}

// Close is the deferred release: safe on the nil handle of a failed acquisition, and
// quiet when the server cannot be reached or refuses the handshake, which expiry makes
// harmless.
func TestCloseIsBestEffort(t *testing.T) {
	ctx := context.Background()
	t.Run("nil lock", func(t *testing.T) {
		srv := testserver.Start(t, testserver.Config{})
		locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
		srv.Do(t, "SET", "taken", "other", "PX", "60000")
		mu, ok, err := locks.TryAcquire(ctx, "taken", time.Minute)
		defer mu.Close() // before checking ok: must be safe
		if ok || err != nil || mu != nil {
			t.Fatal(mu, ok, err)
		}
		if err := mu.Close(); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name  string
		warm  bool // the lock connection was dialled before the fault
		fault func(t *testing.T, srv *testserver.Server)
	}{
		{"connection refused", false, func(t *testing.T, srv *testserver.Server) { srv.Stop(t) }},
		{"connection refused after use", true, func(t *testing.T, srv *testserver.Server) { srv.Stop(t) }},
		{"handshake refused", false, func(t *testing.T, srv *testserver.Server) {
			srv.Do(t, "ACL", "SETUSER", "u", "resetpass", ">changed")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t, testserver.Config{Users: []testserver.User{{Name: "u", Password: "pw", Rules: []string{"+@all", "~*"}}}})
			locks := New(testclient.At(t, srv.Addr(), respire.Options{Username: "u", Password: "pw", DialTimeout: time.Second}))
			mu, err := locks.Acquire(ctx, "k", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if tc.warm {
				if ok, err := mu.ResetExpiry(ctx, time.Minute); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			tc.fault(t, srv)
			if err := mu.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		})
	}
}

// A joiner whose release the leader abandons after the delete was sent shares the
// outcome (ownership uncertain) but not the leader's cancellation: with no deadline of
// its own, its error must not match context.DeadlineExceeded. Against a real server,
// paused so that the delete is written and never answered.
func TestReleaseJoinerGetsItsOwnCause(t *testing.T) {
	// The leader stops waiting by its context's deadline, or by the deadline it gave
	// ReleaseBy.
	for _, byDeadline := range []bool{false, true} {
		t.Run(map[bool]string{false: "context deadline", true: "ReleaseBy deadline"}[byDeadline], func(t *testing.T) {
			testReleaseJoinerGetsItsOwnCause(t, byDeadline)
		})
	}
}

func testReleaseJoinerGetsItsOwnCause(t *testing.T, byDeadline bool) {
	srv := testserver.Start(t, testserver.Config{})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	locks := New(c)
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "joined-uncertain", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The managed calls' connection is dialled before the pause.
	if held, err := mu.ResetExpiry(ctx, time.Minute); !held || err != nil {
		t.Fatal(held, err)
	}
	srv.Pause(t)
	defer srv.Resume(t)

	lctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	leader, joiner := make(chan error, 1), make(chan error, 1)
	go func() {
		var err error
		if byDeadline {
			_, err = mu.ReleaseBy(ctx, time.Now().Add(100*time.Millisecond))
		} else {
			_, err = mu.Release(lctx)
		}
		leader <- err
	}()
	waitState(t, mu, "the leader's release", func(rs *releaseState) bool { return rs.running })
	go func() {
		_, err := mu.Release(ctx)
		joiner <- err
	}()
	waitState(t, mu, "the joiner", func(rs *releaseState) bool { return rs.waiters != nil })

	if err := <-leader; !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("leader: %v, want ownership uncertain by its own deadline", err)
	}
	err = <-joiner
	if !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("joiner: %v, want ownership uncertain, outcome unknown", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("joiner: %v carries the leader's cancellation", err)
	}
}

// A caller of ReleaseBy that joins a release in progress stops waiting for it at its
// own deadline, as under a context with that deadline, however long the leader waits
// (Issue #28: a Redlock's release joining one that its clean-up began). Against a
// real server, paused so that the leader's delete is never answered while it waits.
func TestReleaseByJoinerStopsAtItsDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 20 * time.Second})
	locks := New(c)
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "joined-by", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The managed calls' connection is dialled before the pause.
	if held, err := mu.ResetExpiry(ctx, time.Minute); !held || err != nil {
		t.Fatal(held, err)
	}
	srv.Pause(t)
	leader := make(chan error, 1)
	go func() {
		_, err := mu.Release(ctx)
		leader <- err
	}()
	waitState(t, mu, "the leader's release", func(rs *releaseState) bool { return rs.running })
	_, err = mu.ReleaseBy(ctx, time.Now().Add(100*time.Millisecond))
	srv.Resume(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a joiner past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := <-leader; err != nil {
		t.Errorf("the leader, once the server answers: %v", err)
	}
}

// A deadline-bound release whose delete was written when its deadline passed (the
// server paused) reports the lock lost as uncertain and does not cut the connection
// off: the cut-off dials and waits for its CLIENT KILL for up to severTimeout, past the
// deadline the caller gave (a Redlock's NodeTimeout). The server is resumed only after
// ReleaseBy returned, so a cut-off attempt would have been reported as one.
func TestReleaseByDoesNotCutOffPastItsDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 20 * time.Second, Observer: rec})
	locks := New(c)
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "released-by", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The managed calls' connection is dialled before the pause.
	if held, err := mu.ResetExpiry(ctx, time.Minute); !held || err != nil {
		t.Fatal(held, err)
	}
	srv.Pause(t)
	_, err = mu.ReleaseBy(ctx, time.Now().Add(100*time.Millisecond))
	srv.Resume(t)
	if !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a release past its deadline: %v, want ErrOwnershipUncertain and context.DeadlineExceeded", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.cutoffs) != 0 {
		t.Errorf("cut-offs %v, want none", rec.cutoffs)
	}
}

// commandStarts signals each command a client starts once armed.
type commandStarts struct {
	observe.Base
	armed  atomic.Bool
	starts chan struct{}
}

func (o *commandStarts) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	if o.armed.Load() {
		select {
		case o.starts <- struct{}{}:
		default:
		}
	}
	return ctx
}

// ReleaseBy stops waiting for a keep-alive's renewal in progress at its deadline, as
// under a context with that deadline, rather than until the renewal ends (Issue #28).
// Against a real server, paused so that the renewal is never answered while it waits;
// the caller's context would end with a cause of the test's own first.
func TestReleaseByStopsWaitingForARenewalAtItsDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	obs := &commandStarts{starts: make(chan struct{}, 1)}
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ReadTimeout: 20 * time.Second, Observer: obs})
	locks := New(c)
	ctx := context.Background()
	// The managed calls' connection is dialled before the pause.
	other, err := locks.Acquire(ctx, "renewing-other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := other.ResetExpiry(ctx, time.Minute); !held || err != nil {
		t.Fatal(held, err)
	}
	if _, err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	tok := NewToken()
	if ok, err := locks.TryTake(ctx, "renewing", tok, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Less than half the lease left: the keep-alive renews at once.
	mu, err := locks.Adopt("renewing", tok, time.Minute, time.Now().Add(-40*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	srv.Pause(t)
	obs.armed.Store(true)
	if _, err := mu.KeepAlive(ctx); err != nil {
		t.Fatal(err)
	}
	<-obs.starts // the renewal (SET IFEQ or the script) is sent, and waits
	errGaveUp := errors.New("the test gave up")
	rctx, cancel := context.WithTimeoutCause(ctx, 10*time.Second, errGaveUp)
	defer cancel()
	_, err = mu.ReleaseBy(rctx, time.Now().Add(100*time.Millisecond))
	srv.Resume(t)
	if !errors.Is(err, context.DeadlineExceeded) || conn.WasWritten(err) {
		t.Errorf("ReleaseBy past its deadline while a renewal waits: %v, want a not-sent error matching context.DeadlineExceeded", err)
	}
}
