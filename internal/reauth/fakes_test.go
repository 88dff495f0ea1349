package reauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/observe"
)

// The tests call Rotate by the client method it backs, Reauthenticate.

// errPending and errClosed stand for respire.ErrReauthPending and respire.ErrClosed.
var (
	errPending = errors.New("re-authentication still in progress")
	errClosed  = errors.New("closed")
)

// newRotation is the rotation of provide's credentials, as package respire makes it.
func newRotation(provide func(context.Context) (Credentials, error), obs observe.Observer) *Rotation {
	return New(Options{Provider: provide, Observer: obs, Pending: errPending, Closed: errClosed})
}

// fakeConn is a connection as the rotation sees it: it records its
// re-authentications, at what time, and fails them with err.
type fakeConn struct {
	mu       sync.Mutex
	cur      Credentials
	err      error
	block    chan struct{} // when set, a Reauth waits for it to close (a blocking command ahead)
	delay    time.Duration // each Reauth takes this long (within its ctx)
	failOnce bool          // err is returned once
	reauths  []string      // "user@elapsed"
	start    time.Time
	done     chan struct{}
}

func newFakeConn(cr Credentials, start time.Time) *fakeConn {
	return &fakeConn{cur: cr, start: start, done: make(chan struct{})}
}

func (f *fakeConn) Reauth(ctx context.Context, cr Credentials) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reauths = append(f.reauths, fmt.Sprintf("%s@%v", cr.Username, time.Since(f.start)))
	if f.delay > 0 {
		f.mu.Unlock()
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
		}
		f.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if block := f.block; block != nil {
		f.mu.Unlock()
		select {
		case <-block:
		case <-ctx.Done():
		}
		f.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if f.err != nil {
		err := f.err
		if f.failOnce {
			f.err = nil
		}
		return err
	}
	f.cur = cr
	return nil
}

func (f *fakeConn) AuthenticatedWith(cr Credentials) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur == cr
}

func (f *fakeConn) Done() <-chan struct{} { return f.done }

func (f *fakeConn) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reauths)
}

// scriptedProvider answers each ask with the next step of its script, ExpiresAt
// counted from the ask, and records when it was asked.
type scriptedProvider struct {
	mu    sync.Mutex
	start time.Time
	steps []providerStep
	asked []time.Duration
}

type providerStep struct {
	user       string
	life       time.Duration // 0: never expires
	err        error
	noPassword bool // the user alone, and no error
}

func (p *scriptedProvider) provide(context.Context) (Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, time.Since(p.start))
	if len(p.steps) == 0 {
		return Credentials{}, errors.New("script exhausted")
	}
	s := p.steps[0]
	p.steps = p.steps[1:]
	if s.err != nil {
		return Credentials{}, s.err
	}
	cr := Credentials{Username: s.user, Password: s.user + "-pass"}
	if s.noPassword {
		cr.Password = ""
	}
	if s.life > 0 {
		cr.ExpiresAt = time.Now().Add(s.life)
	}
	return cr, nil
}

// slowAndQuick asks r's provider as a dial would and registers two connections with
// what it gives: slow, whose AUTHs wait until its block is closed (behind a blocking
// command), and quick.
func slowAndQuick(t *testing.T, r *Rotation, start time.Time) (slow, quick *fakeConn) {
	t.Helper()
	ctx := context.Background()
	cr, err := r.ForDial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slow = newFakeConn(cr, start)
	slow.block = make(chan struct{})
	quick = newFakeConn(cr, start)
	for _, cn := range []*fakeConn{slow, quick} {
		if err := r.Register(ctx, cn); err != nil {
			t.Fatal(err)
		}
	}
	return slow, quick
}

// startWithOne asks r's provider as a dial would, registers a connection with what it
// gives, and starts the schedule.
func startWithOne(t *testing.T, r *Rotation, start time.Time) *fakeConn {
	t.Helper()
	ctx := context.Background()
	cr, err := r.ForDial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cn := newFakeConn(cr, start)
	if err := r.Register(ctx, cn); err != nil {
		t.Fatal(err)
	}
	r.Start()
	return cn
}

// dialWithOlder sets up a rotation at tok-2 with one connection, quick, and a
// connection dialled with tok-1 whose registration AUTH (of tok-2) waits until the
// returned channel is closed; registered has register's result.
func dialWithOlder(t *testing.T, start time.Time, steps ...providerStep) (r *Rotation, quick, slow *fakeConn, unblock chan struct{}, registered chan error) {
	t.Helper()
	p := &scriptedProvider{start: start, steps: append([]providerStep{{user: "tok-1"}, {user: "tok-2"}}, steps...)}
	r = newRotation(p.provide, nil)
	ctx := context.Background()
	tok1, _ := r.ForDial(ctx)
	quick = newFakeConn(tok1, start)
	r.Register(ctx, quick)
	r.Start()
	if _, err := r.ForDial(ctx); err != nil { // another dial, given tok-2
		t.Fatal(err)
	}
	synctest.Wait()
	slow = newFakeConn(tok1, start)
	unblock = make(chan struct{})
	slow.block = unblock
	registered = make(chan error, 1)
	go func() { registered <- r.Register(ctx, slow) }()
	synctest.Wait()
	return r, quick, slow, unblock, registered
}
