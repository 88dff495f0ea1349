package respire

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// credentialFailures returns the ConnReauth errors rec was given that match
// conn.ErrCredentials, and the lines logs has of failed re-authentications.
func credentialFailures(rec *reauthRecorder, logs *logRecords) (errs []error, lines []string) {
	rec.mu.Lock()
	for _, err := range rec.errs {
		if errors.Is(err, conn.ErrCredentials) {
			errs = append(errs, err)
		}
	}
	rec.mu.Unlock()
	for _, l := range logs.all() {
		if strings.HasPrefix(l, "WARN respire: re-authentication failed") {
			lines = append(lines, l)
		}
	}
	return errs, lines
}

// TestCredentialsNoPasswordLive: a provider that gives a user and no password, and no
// error, fails a rotation as it fails a dial (conn.ErrCredentials and
// conn.ErrNoPassword), against a real server with ACL users: Reauthenticate says so,
// the schedule reports it to the Observer and the Logger at each retry, and every
// connection keeps its user.
func TestCredentialsNoPasswordLive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1), tokUser(2)}})
	var noPassword atomic.Bool
	var life atomic.Int64
	life.Store(int64(time.Hour))
	provider := func(context.Context) (Credentials, error) {
		if noPassword.Load() {
			return Credentials{Username: tokName(2)}, nil
		}
		return Credentials{Username: tokName(1), Password: tokPass(1), ExpiresAt: time.Now().Add(time.Duration(life.Load()))}, nil
	}
	const name = "nopass"
	rec := &reauthRecorder{}
	logs := &logRecords{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Credentials: provider, ClientName: name,
		Observer: rec, Logger: slog.New(logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	conns := clientConns(t, srv, name)

	noPassword.Store(true)
	if err := c.Reauthenticate(ctx); !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, conn.ErrNoPassword) {
		t.Errorf("Reauthenticate with a provider giving no password: %v, want conn.ErrCredentials and conn.ErrNoPassword", err)
	}
	if other, err := NewClient(ctx, Options{Addrs: []string{srv.Addr()}, Credentials: provider}); err == nil {
		other.Close()
		t.Error("NewClient with a provider giving no password succeeded")
	} else if !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, conn.ErrNoPassword) {
		t.Errorf("NewClient with a provider giving no password: %v, want conn.ErrCredentials and conn.ErrNoPassword", err)
	}
	if errs, lines := credentialFailures(rec, logs); len(errs) != 1 || len(lines) != 1 {
		t.Errorf("Reauthenticate's failure reported %v, logged %q; want once each", errs, lines)
	}

	// Credentials due for renewal in a second, then a provider giving no password:
	// each of the schedule's asks fails, reported.
	noPassword.Store(false)
	life.Store(int64(2 * time.Second))
	if err := c.Reauthenticate(ctx); err != nil {
		t.Fatal(err)
	}
	noPassword.Store(true)
	testkit.WaitFor(t, "the schedule to report two more failures", func() bool {
		errs, lines := credentialFailures(rec, logs)
		return len(errs) >= 3 && len(lines) >= 3
	})
	after := clientConns(t, srv, name)
	for id := range conns {
		if u, ok := after[id]; !ok || u != tokName(1) {
			t.Errorf("connection %s is %q after the failed rotations, want %s", id, u, tokName(1))
		}
	}
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Errorf("PING after the failed rotations: %v", err)
	}
}

// TestCredentialsScheduleNoPassword: on the schedule a provider that gives no password
// is a provider failure: reported to the observer and logged each time, asked again
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
		rec := &reauthRecorder{}
		logs := &logRecords{}
		r := newCredentialRotation(&Options{Credentials: p.provide}, observe.Join(rec, newLogObserver(slog.New(logs))))
		live := startWithOne(t, r, start)
		defer r.close()
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []time.Duration{0, 9 * time.Second, 9250 * time.Millisecond, 9750 * time.Millisecond, 10750 * time.Millisecond, 12750 * time.Millisecond}
		if !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
		if errs, lines := credentialFailures(rec, logs); len(errs) != 4 || len(lines) != 4 {
			t.Errorf("reported %v, logged %q; want the 4 asks without a password, each", errs, lines)
		}
		if got, want := live.log(), []string{"tok-2@12.75s"}; !slices.Equal(got, want) {
			t.Errorf("connection re-authenticated %v, want %v", got, want)
		}
	})
}
