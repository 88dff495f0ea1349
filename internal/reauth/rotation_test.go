package reauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/internal/testkit"
)

// TestCredentialsNewerOnDial: credentials a dial brings that are newer than the
// connections' re-authenticate them at once, and a connection dialled with older ones
// than the newest is re-authenticated before it is handed out.
func TestCredentialsNewerOnDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		tok1, _ := r.ForDial(ctx)
		first := newFakeConn(tok1, start)
		r.Register(ctx, first)
		r.Start()
		defer r.Close()
		time.Sleep(time.Second)
		if _, err := r.ForDial(ctx); err != nil { // another dial, given tok-2
			t.Fatal(err)
		}
		synctest.Wait()
		if got := first.log(); !slices.Equal(got, []string{"tok-2@1s"}) {
			t.Errorf("first connection re-authenticated %v, want tok-2 at 1 s", got)
		}
		late := newFakeConn(tok1, start) // dialled with tok-1, registered after tok-2 came
		if err := r.Register(ctx, late); err != nil {
			t.Fatal(err)
		}
		if got := late.log(); !slices.Equal(got, []string{"tok-2@1s"}) {
			t.Errorf("late connection re-authenticated %v, want tok-2 before it is handed out", got)
		}
	})
}

// TestCredentialsSlowConnFollowsLaterRotation: a connection still re-authenticating
// when newer credentials come is re-authenticated with them once its AUTH ends, and a
// Reauthenticate whose deadline ends meanwhile says it is pending.
func TestCredentialsSlowConnFollowsLaterRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s
			{user: "tok-3", life: time.Hour},         // Reauthenticate at 100 s
		}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		slow, _ := slowAndQuick(t, r, start)
		r.Start()
		defer r.Close()
		time.Sleep(100 * time.Second)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := r.Rotate(rctx); !errors.Is(err, errPending) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Reauthenticate with a connection still on older credentials at its deadline: %v, want errPending", err)
		}
		rcancel()
		time.Sleep(10 * time.Second)
		close(slow.block) // the blocking command ahead of tok-2's AUTH returns
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-3@2m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
		if err := r.Rotate(ctx); err == nil || errors.Is(err, errPending) {
			// The script is exhausted: the provider fails, nothing is pending.
			t.Errorf("Reauthenticate after: %v, want the provider's failure only", err)
		}
	})
}

// TestCredentialsRotationWaitsBehindOlder: a Reauthenticate that finds a connection
// still re-authenticating for an earlier rotation (its AUTH behind a blocking command)
// waits, within its ctx, for that AUTH to end, then re-authenticates the connection
// with its own credentials and returns no error.
func TestCredentialsRotationWaitsBehindOlder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}, {user: "tok-3"}}}
		r := newRotation(p.provide, nil)
		ctx := context.Background()
		slow, quick := slowAndQuick(t, r, start)
		r.Start()
		defer r.Close()
		first, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := r.Rotate(first); !errors.Is(err, errPending) {
			t.Errorf("first Reauthenticate at its deadline: %v, want errPending", err)
		}
		rotated := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			rotated <- r.Rotate(ctx)
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-rotated:
			t.Fatalf("second Reauthenticate returned (%v) with a connection still on the first one's AUTH", err)
		default:
		}
		close(slow.block) // the blocking command ahead of tok-2's AUTH returns at 1.2 s
		if err := <-rotated; err != nil {
			t.Errorf("second Reauthenticate once the older AUTH went: %v, want nil", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1.2s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
		if !slow.AuthenticatedWith(Credentials{Username: "tok-3", Password: "tok-3-pass"}) {
			t.Error("Reauthenticate returned with the slow connection not on tok-3")
		}
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@200ms"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsSlowDialHoldsUpNoPass: a connection whose registration AUTH is slow
// (within its dial's timeout) holds up neither a Reauthenticate with a shorter deadline
// nor other dials' registrations, and follows the newer credentials once it is done.
func TestCredentialsSlowDialHoldsUpNoPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, quick, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.Close()
		rotated := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			rotated <- r.Rotate(ctx)
		}()
		synctest.Wait()
		other := newFakeConn(Credentials{Username: "tok-1", Password: "tok-1-pass"}, start)
		otherDone := make(chan error, 1)
		go func() { otherDone <- r.Register(context.Background(), other) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case err := <-rotated:
			if !errors.Is(err, errPending) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Reauthenticate with a registration still authenticating: %v, want errPending at its deadline", err)
			}
		default:
			t.Error("Reauthenticate with a 1 s deadline still waiting at 2 s for a registration's AUTH")
		}
		select {
		case err := <-otherDone:
			if err != nil {
				t.Errorf("another dial's registration: %v", err)
			}
		default:
			t.Error("another dial's registration held up by a slow one")
		}
		close(unblock)
		synctest.Wait()
		if err := <-registered; err != nil {
			t.Errorf("the slow registration: %v", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@2s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection authenticated %v, want %v: tok-3 once its registration is done", got, want)
		}
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@0s"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
		if got, want := other.log(), []string{"tok-3@0s"}; !slices.Equal(got, want) {
			t.Errorf("other connection authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsRotationWaitsForDial: a Reauthenticate that finds a connection being
// registered with older credentials waits for it and re-authenticates it, and returns
// no error once every connection has the newest.
func TestCredentialsRotationWaitsForDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, _, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.Close()
		rotated := make(chan error, 1)
		go func() { rotated <- r.Rotate(context.Background()) }()
		time.Sleep(time.Second)
		close(unblock)
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the registration is done: %v", err)
		}
		if err := <-registered; err != nil {
			t.Errorf("the slow registration: %v", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsRotationWaitsForDialsInProgress: a Reauthenticate waits for the dials
// in progress as it began (one may register after its pass, with the credentials it
// replaces), within its own deadline: past it, such a dial is pending.
func TestCredentialsRotationWaitsForDialsInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1"}, {user: "tok-1"}, // a connection, then a dial in progress
			{user: "tok-2"},                  // Reauthenticate
			{user: "tok-2"}, {user: "tok-3"}, // another dial, another Reauthenticate
		}}
		r := newRotation(p.provide, nil)
		tok1, _ := r.ForDial(context.Background())
		r.Register(context.Background(), newFakeConn(tok1, start))
		r.Start()
		defer r.Close()

		dialCtx, dialEnd := context.WithCancel(context.Background())
		dialTok, _ := r.ForDial(dialCtx)
		rotated := make(chan error, 1)
		go func() { rotated <- r.Rotate(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-rotated:
			t.Fatalf("Reauthenticate returned (%v) with a dial of the old credentials still in progress", err)
		default:
		}
		time.Sleep(time.Second)
		late := newFakeConn(dialTok, start)
		if err := r.Register(dialCtx, late); err != nil {
			t.Fatal(err)
		}
		dialEnd()
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the dial ended: %v", err)
		}
		if got, want := late.log(), []string{"tok-2@1s"}; !slices.Equal(got, want) {
			t.Errorf("the dialled connection authenticated %v, want %v", got, want)
		}

		dialCtx, dialEnd = context.WithCancel(context.Background())
		defer dialEnd()
		r.ForDial(dialCtx)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := r.Rotate(ctx); !errors.Is(err, errPending) {
			t.Errorf("Reauthenticate with a dial still in progress at its deadline: %v, want errPending", err)
		}
	})
}

// TestCredentialsSlowDialAuthDoesNotHoldUpRotation: while a registration's AUTH waits
// (within its dial's context), a rotation returns when its own context ends. Real time,
// because the regression it guards against is a goroutine blocked on a mutex across
// that AUTH, which a synctest bubble does not count as blocked (the synctest tests
// above would hang on it instead of failing); the watchdog only bounds that failure.
func TestCredentialsSlowDialAuthDoesNotHoldUpRotation(t *testing.T) {
	var n atomic.Int32
	provide := func(context.Context) (Credentials, error) {
		return Credentials{Username: fmt.Sprintf("tok-%d", n.Add(1)), Password: "p"}, nil
	}
	r := newRotation(provide, nil)
	defer r.Close()
	if _, err := r.ForDial(context.Background()); err != nil { // tok-1
		t.Fatal(err)
	}
	cn := newFakeConn(Credentials{Username: "tok-0", Password: "p"}, time.Now())
	block := make(chan struct{})
	var released atomic.Bool
	cn.block = block
	watchdog := time.AfterFunc(2*time.Second, func() { released.Store(true); close(block) })
	defer func() {
		if watchdog.Stop() {
			close(block)
		}
	}()
	registered := make(chan error, 1)
	go func() { registered <- r.Register(context.Background(), cn) }()
	testkit.WaitFor(t, "the registration's AUTH to wait", func() bool { return len(cn.log()) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := r.Rotate(ctx)
	cancel()
	if released.Load() {
		t.Fatal("rotate returned only once the registration's AUTH had ended")
	}
	if !errors.Is(err, errPending) {
		t.Errorf("rotate: %v, want errPending for the connection still registering", err)
	}
	if watchdog.Stop() {
		close(block)
	}
	if err := <-registered; err != nil {
		t.Errorf("register: %v", err)
	}
}

// TestCredentialsDialStormDoesNotHoldPass: with a provider that gives new credentials
// at every ask and a dial every 100 ms whose registration AUTH takes a second, a
// Reauthenticate begun at 1 s still returns within a few seconds, not when the dials
// stop at 20 s.
func TestCredentialsDialStormDoesNotHoldPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var n atomic.Int32
		provide := func(context.Context) (Credentials, error) {
			return Credentials{Username: fmt.Sprintf("tok-%d", n.Add(1)), Password: "p"}, nil
		}
		r := newRotation(provide, nil)
		defer r.Close()
		r.Start()
		var dials sync.WaitGroup
		dials.Go(func() {
			for range 200 { // 20 s of dials
				time.Sleep(100 * time.Millisecond)
				dials.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if _, err := r.ForDial(ctx); err != nil {
						t.Error(err)
						return
					}
					cn := newFakeConn(Credentials{Username: "tok-0", Password: "p"}, start)
					cn.delay = time.Second
					if err := r.Register(ctx, cn); err != nil {
						t.Error(err)
					}
				})
			}
		})
		time.Sleep(time.Second)
		r.Rotate(context.Background())
		took := time.Since(start) - time.Second
		dials.Wait()
		if took > 5*time.Second {
			t.Errorf("Reauthenticate during a dial storm returned after %v, want a few seconds", took)
		}
	})
}

// TestCredentialsFailedRegistrationDropped: a connection whose registration AUTH
// failed (its dial fails and closes it) leaves the registry before the pass waiting
// for it looks again, so no pass sends it an AUTH of its own.
func TestCredentialsFailedRegistrationDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, _, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.Close()
		slow.mu.Lock()
		slow.err = errors.New("the dial's context ended")
		slow.mu.Unlock()
		rotated := make(chan error, 1)
		go func() { rotated <- r.Rotate(context.Background()) }()
		synctest.Wait()
		close(unblock)
		if err := <-registered; err == nil {
			t.Fatal("the failing registration returned no error")
		}
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate: %v", err)
		}
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@0s"}; !slices.Equal(got, want) {
			t.Errorf("the failed connection was sent %v, want its registration's AUTH only", got)
		}
		r.mu.Lock()
		_, kept := r.conns[slow]
		r.mu.Unlock()
		if kept {
			t.Error("the failed connection is still in the registry")
		}
	})
}

// TestCredentialsPendingCountedOnce: a connection whose dial is in progress and whose
// registration AUTH is still waiting as Reauthenticate's deadline ends is one pending
// connection, not one for the dial and one for the AUTH.
func TestCredentialsPendingCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}, {user: "tok-3"}}}
		r := newRotation(p.provide, nil)
		defer r.Close()
		dialCtx, dialEnd := context.WithCancel(context.Background())
		defer dialEnd()
		dialTok, _ := r.ForDial(dialCtx)    // the dial, given tok-1
		r.ForDial(context.Background())     // another, given tok-2
		slow := newFakeConn(dialTok, start) // registers with tok-2's AUTH, which waits
		slow.block = make(chan struct{})
		defer close(slow.block)
		go r.Register(dialCtx, slow)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		left, behind, err := r.rotateCounted(ctx)
		if left != 1 || behind != 0 || err != nil {
			t.Errorf("Reauthenticate with one connection still dialling: %d left, %d behind, %v; want 1, 0, nil", left, behind, err)
		}
	})
}

// TestCredentialsRefusalReportedAtDeadline: a refusal that came before Reauthenticate's
// deadline is in its error even when a slower connection made it wait until the
// deadline: a landed flight is never counted pending instead. Repeated, because the
// order the pass looks at its connections in is a map's.
func TestCredentialsRefusalReportedAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("WRONGPASS")
		for range 40 {
			start := time.Now()
			p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}}}
			r := newRotation(p.provide, nil)
			tok1, _ := r.ForDial(context.Background())
			bad := newFakeConn(tok1, start)
			bad.err = refused
			slow := newFakeConn(tok1, start)
			slow.block = make(chan struct{})
			r.Register(context.Background(), bad)
			r.Register(context.Background(), slow)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			left, _, err := r.rotateCounted(ctx)
			cancel()
			close(slow.block)
			r.Close()
			if left != 1 || !errors.Is(err, refused) {
				t.Fatalf("Reauthenticate with one refusal and one connection still waiting: %d left, %v; want 1 and the refusal", left, err)
			}
		}
	})
}

// A rotation whose Options name no errors reports its own: Rotate after Close fails
// with ErrClosed rather than with a nil error wrapped.
func TestDefaultErrors(t *testing.T) {
	r := New(Options{Provider: func(context.Context) (Credentials, error) { return Credentials{Username: "u", Password: "p"}, nil }})
	r.Start()
	r.Close()
	if err := r.Rotate(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Rotate after Close: %v, want ErrClosed", err)
	}
}
