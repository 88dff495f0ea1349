package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// TestAdoptIntoNeedsAZeroLock: AdoptInto makes a handle in a zero Lock, and refuses
// one that holds a lease already (adopted or acquired), leaving it as it was, with
// ErrInvalidArg: mixed in place, the old lease's state would pass for the new one's.
func TestAdoptIntoNeedsAZeroLock(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	l := New(testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}}))
	ctx := context.Background()
	tok := NewToken()
	if ok, err := l.TryTake(ctx, "adopt:a", tok, time.Minute); !ok || err != nil {
		t.Fatalf("TryTake: %v, %v", ok, err)
	}
	var m Lock
	if err := l.AdoptInto(&m, "adopt:a", tok, time.Minute, time.Now()); err != nil {
		t.Fatalf("AdoptInto a zero Lock: %v", err)
	}
	acquired, ok, err := l.TryAcquire(ctx, "adopt:c", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire: %v, %v", ok, err)
	}
	defer acquired.Close()
	for name, used := range map[string]*Lock{"adopted": &m, "acquired": acquired} {
		err := l.AdoptInto(used, "adopt:b", NewToken(), time.Second, time.Now())
		if !errors.Is(err, ErrInvalidArg) {
			t.Errorf("AdoptInto a Lock %s before: %v, want ErrInvalidArg", name, err)
		}
	}
	if m.Key() != "adopt:a" || m.Token() != tok {
		t.Errorf("the refused AdoptInto changed the handle: key %q", m.Key())
	}
	if out, err := m.Release(ctx); out != Released || err != nil {
		t.Errorf("Release of the adopted lease: %v, %v", out, err)
	}
	if err := l.AdoptInto(nil, "adopt:b", NewToken(), time.Second, time.Now()); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("AdoptInto nil: %v, want ErrInvalidArg", err)
	}
}
