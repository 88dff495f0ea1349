package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/internal/testkit"
)

func TestGetPutReusesMostRecentFirst(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 3})
	a, b, c := mustGet(t, p), mustGet(t, p), mustGet(t, p)
	if a == b || b == c || a == c {
		t.Fatal("Get returned the same connection twice")
	}
	wantStats(t, p.Stats(), map[string]int{"Misses": 3, "Dials": 3, "Hits": 0, "Total": 3, "InUse": 3, "Idle": 0})

	p.Put(a)
	p.Put(b)
	p.Put(c)
	wantStats(t, p.Stats(), map[string]int{"Total": 3, "InUse": 0, "Idle": 3, "Closed": 0})

	for i, want := range []*fakeConn{c, b, a} {
		if got := mustGet(t, p); got != want {
			t.Errorf("Get #%d = conn %d, want conn %d (most recently returned first)", i, got.id, want.id)
		}
	}
	wantStats(t, p.Stats(), map[string]int{"Misses": 3, "Dials": 3, "Hits": 3, "Total": 3, "InUse": 3, "Idle": 0})
	for _, x := range []*fakeConn{a, b, c} {
		if x.closed() {
			t.Errorf("conn %d closed", x.id)
		}
		p.Put(x)
	}
}

func TestSizeBoundsConcurrentCheckouts(t *testing.T) {
	const size, workers, rounds = 10, 100, 200
	p, d := newTestPool(t, Options[*fakeConn]{Size: size})

	var holders, maxHolders atomic.Int32
	var owner sync.Map // conn -> worker, to catch a connection handed to two callers
	var shared atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				c, err := p.Get(context.Background())
				if err != nil {
					t.Errorf("Get: %v", err)
					return
				}
				if _, loaded := owner.LoadOrStore(c, w); loaded {
					shared.Add(1)
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched()
				holders.Add(-1)
				owner.Delete(c)
				p.Put(c)
			}
		})
	}
	wg.Wait()

	if m := maxHolders.Load(); m > size {
		t.Errorf("%d connections checked out at once, Size is %d", m, size)
	}
	if n := shared.Load(); n != 0 {
		t.Errorf("%d times a connection was handed to a second caller while checked out", n)
	}
	if n := len(d.dialed()); n > size {
		t.Errorf("dialled %d connections, Size is %d", n, size)
	}
	s := p.Stats()
	wantStats(t, s, map[string]int{"Total": len(d.dialed()), "Idle": len(d.dialed()), "InUse": 0,
		"Waiters": 0, "Timeouts": 0, "Closed": 0, "Dialing": 0})
	if got := s.Hits + s.Misses; got != workers*rounds {
		t.Errorf("Hits+Misses = %d, want %d checkouts", got, workers*rounds)
	}
	checkInvariants(t, p)
	t.Logf("max checked out %d of %d; %+v", maxHolders.Load(), size, s)
}

func TestWaitersServedFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
		held := mustGet(t, p)

		const n = 5
		served := make(chan int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				c, err := p.Get(context.Background())
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				served <- i
				p.Put(c)
			})
			synctest.Wait() // waiter i is queued before waiter i+1 starts
		}
		wantStats(t, p.Stats(), map[string]int{"Waiters": n, "InUse": 1})

		p.Put(held)
		wg.Wait()
		close(served)
		want := 0
		for got := range served {
			if got != want {
				t.Errorf("waiter %d served in position %d", got, want)
			}
			want++
		}
		// One dial; every waiter was handed the returned connection.
		wantStats(t, p.Stats(), map[string]int{"Dials": 1, "Misses": 1, "Hits": n, "Total": 1, "Idle": 1, "Waiters": 0})
	})
}

func TestExhaustedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 2})
		a, b := mustGet(t, p), mustGet(t, p)

		// Two callers already waiting, with contexts the test cancels.
		bgCtx, cancelBg := context.WithCancel(context.Background())
		bgErrs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := p.Get(bgCtx)
				bgErrs <- err
			}()
		}
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		c, err := p.Get(ctx)
		if err == nil {
			t.Fatalf("Get returned conn %d from an exhausted pool", c.id)
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("Get waited %v, want the 50ms deadline", waited)
		}
		const want = "pool: exhausted: all 2 connections in use, 3 waiting: context deadline exceeded"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Error("errors.Is(err, context.DeadlineExceeded) = false")
		}
		if !errors.Is(err, ErrExhausted) {
			t.Error("errors.Is(err, ErrExhausted) = false")
		}
		if errors.Is(err, context.Canceled) {
			t.Error("errors.Is(err, context.Canceled) = true")
		}
		var ee *ExhaustedError
		if !errors.As(err, &ee) {
			t.Fatalf("errors.As(%T, *ExhaustedError) = false", err)
		}
		if *ee != (ExhaustedError{Size: 2, InUse: 2, Waiters: 3, Err: context.DeadlineExceeded}) {
			t.Errorf("ExhaustedError = %+v", *ee)
		}
		wantStats(t, p.Stats(), map[string]int{"Timeouts": 1, "Waiters": 2, "InUse": 2})

		cancelBg()
		for range 2 {
			err := <-bgErrs
			if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrExhausted) {
				t.Errorf("cancelled waiter: %v, want Canceled and ErrExhausted", err)
			}
		}
		wantStats(t, p.Stats(), map[string]int{"Timeouts": 3, "Waiters": 0})

		// The pool still works: a returned connection is handed out again.
		p.Put(a)
		if got := mustGet(t, p); got != a {
			t.Errorf("Get = conn %d, want returned conn %d", got.id, a.id)
		}
		p.Put(a)
		p.Put(b)
	})
}

func TestExhaustedErrorMessage(t *testing.T) {
	tests := []struct {
		err  ExhaustedError
		want string
	}{
		{ExhaustedError{Size: 10, InUse: 10, Waiters: 3, Err: context.DeadlineExceeded},
			"pool: exhausted: all 10 connections in use, 3 waiting: context deadline exceeded"},
		{ExhaustedError{Size: 10, InUse: 7, Waiters: 1, Err: context.Canceled},
			"pool: exhausted: 7 of 10 connections in use, 1 waiting: context canceled"},
		{ExhaustedError{Size: 1, InUse: 1, Waiters: 1},
			"pool: exhausted: all 1 connections in use, 1 waiting"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(&tt.err, ErrExhausted) {
			t.Errorf("%q does not match ErrExhausted", tt.want)
		}
	}
}

func TestGetWithDoneContext(t *testing.T) {
	p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Get(ctx)
	if err != context.Canceled {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled as is", err)
	}
	if errors.Is(err, ErrExhausted) {
		t.Error("a Get that never waited reports ErrExhausted")
	}
	if n := len(d.dialed()); n != 0 {
		t.Errorf("dialled %d connections", n)
	}
	wantStats(t, p.Stats(), map[string]int{"Misses": 0, "Timeouts": 0, "Total": 0})
}

// TestCancelRacingPut runs a waiter's cancellation against the Put that would serve it,
// many times, and checks the connection always ends up back in the pool.
func TestCancelRacingPut(t *testing.T) {
	const rounds = 2000
	p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
	var served, timedOut int
	for range rounds {
		held := mustGet(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() {
			c, err := p.Get(ctx)
			if err == nil {
				p.Put(c)
			}
			result <- err
		}()
		testkit.WaitFor(t, "a waiter", func() bool { return p.Stats().Waiters == 1 })

		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { <-start; cancel() })
		wg.Go(func() { <-start; p.Put(held) })
		close(start)
		wg.Wait()

		switch err := <-result; {
		case err == nil:
			served++
		case errors.Is(err, context.Canceled) && errors.Is(err, ErrExhausted):
			timedOut++
		default:
			t.Fatalf("waiter: %v", err)
		}
		s := p.Stats()
		if s.Total != 1 || s.Idle != 1 || s.InUse != 0 || s.Waiters != 0 || s.Closed != 0 {
			t.Fatalf("after round: %+v; want the one connection idle", s)
		}
	}
	if n := len(d.dialed()); n != 1 {
		t.Errorf("dialled %d connections, want 1", n)
	}
	checkInvariants(t, p)
	t.Logf("%d rounds: waiter served %d, cancelled %d", rounds, served, timedOut)
}

// TestCancelRacingDiscard is TestCancelRacingPut with the slot, not a connection, passed
// to the waiter: the slot must never leak.
func TestCancelRacingDiscard(t *testing.T) {
	const rounds = 2000
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
	for range rounds {
		held := mustGet(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		result := make(chan error, 1)
		go func() {
			c, err := p.Get(ctx)
			if err == nil {
				p.Put(c)
			}
			result <- err
		}()
		testkit.WaitFor(t, "a waiter", func() bool { return p.Stats().Waiters == 1 })

		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { <-start; cancel() })
		wg.Go(func() { <-start; p.Discard(held) })
		close(start)
		wg.Wait()

		if err := <-result; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
		s := p.Stats()
		if s.Total > 1 || s.InUse != 0 || s.Waiters != 0 || s.Dialing != 0 {
			t.Fatalf("after round: %+v", s)
		}
		checkInvariants(t, p)
	}
}

func TestBrokenConnOnPutIsClosed(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
	a := mustGet(t, p)
	a.setErr(errors.New("read: connection reset"))
	p.Put(a)
	if !a.closed() {
		t.Error("broken connection not closed on Put")
	}
	wantStats(t, p.Stats(), map[string]int{"Total": 0, "Idle": 0, "Closed": 1})

	b := mustGet(t, p)
	if b == a {
		t.Fatal("broken connection handed out again")
	}
	wantStats(t, p.Stats(), map[string]int{"Misses": 2, "Hits": 0, "Dials": 2, "Total": 1, "Closed": 1})
	p.Put(b)
}

func TestBrokenWhileIdleIsNotHandedOut(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 2})
	a, b := mustGet(t, p), mustGet(t, p)
	p.Put(a)
	p.Put(b)
	b.setErr(errors.New("EOF")) // its reader saw the server go away while idle

	if got := mustGet(t, p); got != a {
		t.Errorf("Get = conn %d, want conn %d (b is broken)", got.id, a.id)
	} else {
		p.Put(got)
	}
	if !b.closed() {
		t.Error("broken idle connection not closed")
	}
	wantStats(t, p.Stats(), map[string]int{"Hits": 1, "Misses": 2, "Total": 1, "Idle": 1, "Closed": 1})
}

func TestBrokenConnFreesSlotForWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
		a := mustGet(t, p)
		got := make(chan *fakeConn)
		go func() {
			c, err := p.Get(context.Background())
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			got <- c
		}()
		synctest.Wait()
		a.setErr(errors.New("EOF"))
		p.Put(a)
		b := <-got
		if b == nil || b == a {
			t.Fatal("waiter not given a fresh connection")
		}
		wantStats(t, p.Stats(), map[string]int{"Misses": 2, "Dials": 2, "Closed": 1, "Total": 1, "InUse": 1})
		p.Put(b)
	})
}

func TestDiscard(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
	a := mustGet(t, p)
	p.Discard(a)
	if !a.closed() {
		t.Error("Discard did not close the connection")
	}
	wantStats(t, p.Stats(), map[string]int{"Total": 0, "Closed": 1})
	b := mustGet(t, p)
	if b == a {
		t.Error("discarded connection handed out again")
	}
	p.Put(b)
}

func TestPutOfUnknownConnPanics(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 2})
	a := mustGet(t, p)
	p.Put(a)
	for name, f := range map[string]func(){
		"second Put":        func() { p.Put(a) },
		"Discard of idle":   func() { p.Discard(a) },
		"Put of a stranger": func() { p.Put(&fakeConn{}) },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "not checked out from this pool") {
					t.Errorf("%s: recovered %v, want a panic", name, r)
				}
			}()
			f()
		}()
	}
	// The pool's lock was released and its state is intact.
	if got := mustGet(t, p); got != a {
		t.Errorf("Get = conn %d, want %d", got.id, a.id)
	} else {
		p.Put(got)
	}
}

func TestDialErrorFreesSlot(t *testing.T) {
	p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
	d.setHook(func(_ context.Context, n int) error {
		if n == 1 {
			return errDial
		}
		return nil
	})
	_, err := p.Get(context.Background())
	if !errors.Is(err, errDial) {
		t.Fatalf("Get: %v, want %v", err, errDial)
	}
	if want := "dial refused"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	wantStats(t, p.Stats(), map[string]int{"Dials": 1, "DialErrors": 1, "Misses": 1, "Total": 0, "Dialing": 0})

	a := mustGet(t, p)
	wantStats(t, p.Stats(), map[string]int{"Dials": 2, "DialErrors": 1, "Misses": 2, "Total": 1})
	p.Put(a)
}

func TestDialErrorWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
		release := make(chan struct{})
		d.setHook(func(_ context.Context, n int) error {
			if n == 1 {
				<-release
				return errDial
			}
			return nil
		})

		firstErr := make(chan error, 1)
		go func() {
			_, err := p.Get(context.Background())
			firstErr <- err
		}()
		synctest.Wait() // dialling, holding the only slot
		second := make(chan *fakeConn, 1)
		go func() {
			c, err := p.Get(context.Background())
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			second <- c
		}()
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Dialing": 1, "Waiters": 1, "Total": 0})

		close(release)
		if err := <-firstErr; !errors.Is(err, errDial) {
			t.Errorf("first Get: %v, want %v", err, errDial)
		}
		c := <-second
		if c == nil {
			t.Fatal("waiter got no connection after the failed dial freed the slot")
		}
		wantStats(t, p.Stats(), map[string]int{"Dials": 2, "DialErrors": 1, "Misses": 2, "Total": 1, "Waiters": 0})
		p.Put(c)
	})
}

func TestDialUsesGetContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
		d.setHook(func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := p.Get(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get: %v, want the dial to end with the Get's deadline", err)
		}
		if errors.Is(err, ErrExhausted) {
			t.Error("a failed dial reports ErrExhausted")
		}
		wantStats(t, p.Stats(), map[string]int{"DialErrors": 1, "Total": 0, "Dialing": 0})
	})
}

func TestHealthCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, HealthCheckAfter: time.Second})
		a := mustGet(t, p)
		p.Put(a)

		time.Sleep(500 * time.Millisecond)
		if got := mustGet(t, p); got != a {
			t.Fatalf("Get = conn %d, want %d", got.id, a.id)
		}
		if n := a.pings.Load(); n != 0 {
			t.Errorf("pinged %d times after 500ms idle, want 0", n)
		}
		p.Put(a)

		time.Sleep(time.Second)
		if got := mustGet(t, p); got != a {
			t.Fatalf("Get = conn %d, want healthy conn %d", got.id, a.id)
		}
		if n := a.pings.Load(); n != 1 {
			t.Errorf("pinged %d times after 1s idle, want 1", n)
		}
		p.Put(a)
		wantStats(t, p.Stats(), map[string]int{"Hits": 2, "Misses": 1, "Closed": 0})

		a.setPingErr(errors.New("i/o timeout"))
		time.Sleep(time.Second)
		b := mustGet(t, p)
		if b == a {
			t.Fatal("connection that failed its health check was handed out")
		}
		if !a.closed() {
			t.Error("connection that failed its health check was not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Hits": 2, "Misses": 2, "Dials": 2, "Closed": 1, "Total": 1, "InUse": 1})
		p.Put(b)
	})
}

func TestHealthCheckTriesNextIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 2, HealthCheckAfter: time.Second})
		a, b := mustGet(t, p), mustGet(t, p)
		p.Put(a)
		p.Put(b)
		b.setPingErr(errors.New("i/o timeout"))
		time.Sleep(time.Second)

		if got := mustGet(t, p); got != a {
			t.Fatalf("Get = conn %d, want conn %d after b failed its ping", got.id, a.id)
		}
		if !b.closed() {
			t.Error("b not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Dials": 2, "Hits": 1, "Closed": 1, "Total": 1})
		p.Put(a)
	})
}

func TestMaxLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, MaxLifetime: 10 * time.Second})
		if p.maintainDone != nil {
			t.Error("MaxLifetime alone started the background goroutine")
		}
		a := mustGet(t, p)
		p.Put(a)
		time.Sleep(5 * time.Second)
		if got := mustGet(t, p); got != a {
			t.Fatalf("Get at 5s = conn %d, want %d", got.id, a.id)
		}

		// Expires while checked out: closed on return.
		time.Sleep(5 * time.Second)
		p.Put(a)
		if !a.closed() {
			t.Error("connection past MaxLifetime not closed on Put")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Closed": 1})

		// Expires while idle: closed at checkout.
		b := mustGet(t, p)
		p.Put(b)
		time.Sleep(10 * time.Second)
		c := mustGet(t, p)
		if c == b || !b.closed() {
			t.Error("connection past MaxLifetime handed out from idle")
		}
		wantStats(t, p.Stats(), map[string]int{"Hits": 1, "Misses": 3, "Closed": 2, "Total": 1})
		p.Put(c)
	})
}

func TestMaxIdleTimeReaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 2, MaxIdleTime: 4 * time.Second})
		a, b := mustGet(t, p), mustGet(t, p)
		p.Put(a)
		time.Sleep(2 * time.Second)
		p.Put(b) // idle from t=2s

		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		if !a.closed() || b.closed() {
			t.Errorf("at 4s: a closed %v (want true), b closed %v (want false)", a.closed(), b.closed())
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 1, "Idle": 1, "Closed": 1})

		// Checking b out and back in restarts its idle time.
		p.Put(mustGet(t, p))
		time.Sleep(3 * time.Second)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Total": 1, "Idle": 1, "Closed": 1})
		// Reaped within one tick (1s) of reaching MaxIdleTime.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !b.closed() {
			t.Error("b not reaped within a tick of 4s idle")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Idle": 0, "Closed": 2})
	})
}

func TestMinIdleFilledInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 5, MinIdle: 3})
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Idle": 3, "Total": 3, "Dials": 3, "Misses": 0})

		// A checkout is a hit, and the goroutine tops the idle set back up at once.
		a := mustGet(t, p)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Hits": 1, "Misses": 0, "Idle": 3, "Total": 4, "Dials": 4})

		// Never past Size.
		b, c := mustGet(t, p), mustGet(t, p)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Hits": 3, "Idle": 2, "Total": 5, "InUse": 3, "Dials": 5})
		if n := len(d.dialed()); n != 5 {
			t.Errorf("dialled %d, want 5", n)
		}
		for _, x := range []*fakeConn{a, b, c} {
			p.Put(x)
		}
		wantStats(t, p.Stats(), map[string]int{"Idle": 5, "Total": 5})
	})
}

func TestMinIdleRetriesFailedDialsEachTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fail atomic.Bool
		fail.Store(true)
		d := &fakeDialer{}
		d.setHook(func(context.Context, int) error {
			if fail.Load() {
				return errDial
			}
			return nil
		})
		p := newTestPoolOn(t, Options[*fakeConn]{Size: 4, MinIdle: 2}, d)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Dials": 1, "DialErrors": 1, "Total": 0})
		time.Sleep(time.Second)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Dials": 2, "DialErrors": 2, "Total": 0})

		fail.Store(false)
		time.Sleep(time.Second)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Dials": 4, "DialErrors": 2, "Total": 2, "Idle": 2, "Dialing": 0})
	})
}

func TestMinIdleWithMaxIdleTimeReplacesStaleConns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 2, MinIdle: 1, MaxIdleTime: 4 * time.Second})
		synctest.Wait()
		first := d.dialed()
		if len(first) != 1 {
			t.Fatalf("dialled %d, want 1", len(first))
		}
		time.Sleep(4*time.Second + time.Millisecond)
		synctest.Wait()
		if !first[0].closed() {
			t.Error("idle connection kept past MaxIdleTime")
		}
		wantStats(t, p.Stats(), map[string]int{"Idle": 1, "Total": 1, "Closed": 1, "Dials": 2})
	})
}

func TestCloseFailsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
		a := mustGet(t, p)
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := p.Get(context.Background())
				errs <- err
			}()
		}
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Waiters": 3})

		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for range 3 {
			if err := <-errs; err != ErrClosed {
				t.Errorf("waiter: %v, want ErrClosed", err)
			}
		}
		if a.closed() {
			t.Error("Close closed a connection in use")
		}
		p.Put(a)
		if !a.closed() {
			t.Error("connection returned after Close not closed")
		}
		if _, err := p.Get(context.Background()); err != ErrClosed {
			t.Errorf("Get after Close: %v, want ErrClosed", err)
		}
		wantStats(t, p.Stats(), map[string]int{"Waiters": 0, "Total": 0, "Closed": 1, "Timeouts": 0})
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestCloseClosesIdle(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 3})
	a, b, c := mustGet(t, p), mustGet(t, p), mustGet(t, p)
	p.Put(a)
	p.Put(b)
	closeErr := errors.New("close failed")
	b.closeErr = closeErr

	err := p.Close()
	if !errors.Is(err, closeErr) {
		t.Errorf("Close: %v, want the idle connection's close error", err)
	}
	if !a.closed() || !b.closed() || c.closed() {
		t.Errorf("closed: a %v b %v c %v; want idle a and b only", a.closed(), b.closed(), c.closed())
	}
	wantStats(t, p.Stats(), map[string]int{"Idle": 0, "Total": 1, "InUse": 1, "Closed": 2})
	p.Discard(c)
	wantStats(t, p.Stats(), map[string]int{"Total": 0, "Closed": 3})
}

func TestCloseDuringDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
		release := make(chan struct{})
		d.setHook(func(context.Context, int) error { <-release; return nil })
		errc := make(chan error, 1)
		go func() {
			_, err := p.Get(context.Background())
			errc <- err
		}()
		synctest.Wait()
		p.Close()
		close(release)
		if err := <-errc; err != ErrClosed {
			t.Errorf("Get: %v, want ErrClosed", err)
		}
		if c := d.dialed(); len(c) != 1 || !c[0].closed() {
			t.Error("connection dialled after Close not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Dialing": 0, "Closed": 1})
	})
}

func TestCloseStopsBackgroundGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The background dial blocks until Close cancels it.
		d := &fakeDialer{}
		d.setHook(func(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() })
		p := newTestPoolOn(t, Options[*fakeConn]{Size: 2, MinIdle: 2, MaxIdleTime: time.Minute}, d)
		synctest.Wait()
		wantStats(t, p.Stats(), map[string]int{"Dialing": 1})
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Close returned only after the goroutine exited; synctest.Test would report it
		// otherwise, and so would goleak.
		select {
		case <-p.maintainDone:
		default:
			t.Fatal("background goroutine still running after Close")
		}
		wantStats(t, p.Stats(), map[string]int{"Dialing": 0, "DialErrors": 1, "Total": 0})
	})
}

func TestNoBackgroundGoroutineByDefault(t *testing.T) {
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, MaxLifetime: time.Hour, HealthCheckAfter: time.Second})
	if p.maintainDone != nil || p.wake != nil {
		t.Error("background goroutine started without MinIdle or MaxIdleTime")
	}
}

func TestGetPutDoesNotAllocate(t *testing.T) {
	if testkit.Race {
		t.Skip("allocation counts differ under -race")
	}
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 4, MaxLifetime: time.Hour, MaxIdleTime: time.Hour})
	ctx := context.Background()
	p.Put(mustGet(t, p))
	allocs := testing.AllocsPerRun(1000, func() {
		c, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Put(c)
	})
	if allocs != 0 {
		t.Errorf("Get+Put from idle: %v allocs, want 0", allocs)
	}
}

func TestHealthCheckAbandonedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, HealthCheckAfter: time.Second})
		a := mustGet(t, p)
		p.Put(a)
		a.setPingHook(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		time.Sleep(time.Second)

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := p.Get(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get: %v, want context.DeadlineExceeded", err)
		}
		if !a.closed() {
			t.Error("connection with an abandoned ping not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Closed": 1, "Hits": 0, "Misses": 1})
	})
}

func TestCloseDuringHealthCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, HealthCheckAfter: time.Second})
		a := mustGet(t, p)
		p.Put(a)
		release := make(chan struct{})
		a.setPingHook(func(context.Context) error { <-release; return nil })
		time.Sleep(time.Second)

		errc := make(chan error, 1)
		go func() {
			_, err := p.Get(context.Background())
			errc <- err
		}()
		synctest.Wait() // pinging
		p.Close()
		close(release)
		if err := <-errc; err != ErrClosed {
			t.Errorf("Get: %v, want ErrClosed", err)
		}
		if !a.closed() {
			t.Error("connection not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Closed": 1})
	})
}

// TestCloseRacingGrantedSlot closes the pool just after a Discard hands the freed slot
// to a waiter; whichever runs first, the waiter gets ErrClosed and nothing leaks.
func TestCloseRacingGrantedSlot(t *testing.T) {
	for range 200 {
		p, d := newTestPool(t, Options[*fakeConn]{Size: 1})
		held := mustGet(t, p)
		errc := make(chan error, 1)
		go func() {
			c, err := p.Get(context.Background())
			if err == nil {
				p.Put(c)
			}
			errc <- err
		}()
		testkit.WaitFor(t, "a waiter", func() bool { return p.Stats().Waiters == 1 })
		p.Discard(held)
		p.Close()
		if err := <-errc; err != nil && err != ErrClosed {
			t.Fatalf("waiter: %v", err)
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Dialing": 0, "Waiters": 0})
		for _, c := range d.dialed() {
			if !c.closed() {
				t.Fatalf("conn %d left open after Close", c.id)
			}
		}
		checkInvariants(t, p)
	}
}

func TestCloseRacingCancelledWaiter(t *testing.T) {
	for range 200 {
		p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
		held := mustGet(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := p.Get(ctx)
			errc <- err
		}()
		testkit.WaitFor(t, "a waiter", func() bool { return p.Stats().Waiters == 1 })
		go cancel()
		p.Close()
		if err := <-errc; err != ErrClosed && !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
		p.Put(held)
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Waiters": 0})
		cancel()
	}
}

func TestCloseDuringBackgroundDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A dialer that completes even though its context was cancelled.
		d := &fakeDialer{}
		d.setHook(func(ctx context.Context, _ int) error { <-ctx.Done(); return nil })
		p := newTestPoolOn(t, Options[*fakeConn]{Size: 1, MinIdle: 1}, d)
		synctest.Wait()
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if c := d.dialed(); len(c) != 1 || !c[0].closed() {
			t.Error("connection dialled in the background after Close not closed")
		}
		wantStats(t, p.Stats(), map[string]int{"Total": 0, "Dialing": 0, "Closed": 1, "Dials": 1})
	})
}

// TestCancelledWaiterGivesBackLateGrant makes a waiter's context end and its grant
// arrive together, by doing both while holding the pool's lock, so the waiter finds
// itself granted after its context ended and must pass the grant on.
func TestCancelledWaiterGivesBackLateGrant(t *testing.T) {
	for _, kind := range []string{"conn", "slot"} {
		t.Run(kind, func(t *testing.T) {
			p, _ := newTestPool(t, Options[*fakeConn]{Size: 1})
			var late int
			for range 100 {
				held := mustGet(t, p)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					c, err := p.Get(ctx)
					if err == nil {
						p.Put(c)
					}
					errc <- err
				}()
				testkit.WaitFor(t, "a waiter", func() bool { return p.Stats().Waiters == 1 })

				p.mu.Lock()
				cancel()
				if kind == "conn" {
					p.returnLocked(held, time.Now()) // what Put does
				} else {
					p.forgetLocked(held) // what Discard does
				}
				p.mu.Unlock()
				if kind == "slot" {
					held.Close()
				}

				// The waiter's select sees both; either outcome is fine, as long as
				// nothing is lost.
				switch err := <-errc; {
				case err == nil:
				case errors.Is(err, context.Canceled) && errors.Is(err, ErrExhausted):
					late++
				default:
					t.Fatalf("waiter: %v", err)
				}
				s := p.Stats()
				if s.InUse != 0 || s.Waiters != 0 || s.Dialing != 0 || s.Total > 1 {
					t.Fatalf("after round: %+v", s)
				}
				checkInvariants(t, p)
			}
			if late == 0 {
				t.Error("the waiter never saw its context end first; the give-back path was not exercised")
			}
			t.Logf("give-back path taken %d of 100 rounds", late)
		})
	}
}
