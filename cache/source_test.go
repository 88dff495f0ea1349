package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire/internal/mono"
	"github.com/respire/respire/resp"
)

// scriptedSource is a Source whose answers a test sets: catchUp runs inside CatchUp,
// as the reader applying what it had read would, and a successful CatchUp makes the
// source current, as a real one publishes. onCurrent runs inside Current.
type scriptedSource struct {
	current   bool
	catchUps  int
	catchUp   func(ctx context.Context) error
	onCurrent func()
	nows      []int64 // the readings Current was asked about
}

func (s *scriptedSource) Current(now int64) bool {
	s.nows = append(s.nows, now)
	if s.onCurrent != nil {
		s.onCurrent()
	}
	return s.current
}

func (s *scriptedSource) CatchUp(ctx context.Context) error {
	s.catchUps++
	if s.catchUp != nil {
		if err := s.catchUp(ctx); err != nil {
			return err
		}
	}
	s.current = true
	return nil
}

var errLost = errors.New("the connection is lost")

// A hit is served at once while its source is current, and only after the source
// caught up otherwise; an invalidation applied while catching up turns it into a miss.
func TestGetWaitsForItsSource(t *testing.T) {
	args := []any{"GET", "k"}
	cases := []struct {
		name        string
		current     bool
		catchUp     func(c *Cache) func(context.Context) error
		wantHit     bool
		wantCatchUp int
	}{
		{"current", true, nil, true, 0},
		{"behind, nothing pending", false, func(*Cache) func(context.Context) error { return nil }, true, 1},
		{"behind, an invalidation pending", false, func(c *Cache) func(context.Context) error {
			return func(context.Context) error { c.Invalidate("k"); return nil }
		}, false, 1},
		{"behind, a flush pending", false, func(c *Cache) func(context.Context) error {
			return func(context.Context) error { c.Flush(); return nil }
		}, false, 1},
		{"lost", false, func(*Cache) func(context.Context) error {
			return func(context.Context) error { return errLost }
		}, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newT(t, Options{})
			src := &scriptedSource{current: tc.current}
			if tc.catchUp != nil {
				src.catchUp = tc.catchUp(c)
			}
			c.Store(c.Reserve("k", src), args, resp.BulkString("v"), time.Hour)
			before := mono.Now()
			_, ok, err := c.Get(context.Background(), "k", args)
			after := mono.Now()
			if err != nil || ok != tc.wantHit || src.catchUps != tc.wantCatchUp {
				t.Fatalf("Get: hit %v, err %v, %d catch-ups; want hit %v, %d catch-ups", ok, err, src.catchUps, tc.wantHit, tc.wantCatchUp)
			}
			// The source is asked about the moment of the hit, on the clock it
			// compares its own readings with.
			if len(src.nows) == 0 {
				t.Fatal("Get never asked its source whether it is current")
			}
			for _, now := range src.nows {
				if now < before || now > after {
					t.Errorf("Current(%d) asked outside the Get's window [%d, %d]", now, before, after)
				}
			}
			st := c.Stats()
			if hits := map[bool]int64{true: 1}[tc.wantHit]; st.Hits != hits || st.Hits+st.Misses != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// A caller whose context ends while the source catches up gets its context's error,
// not a hit and not a silent miss.
func TestGetCancelledWhileCatchingUp(t *testing.T) {
	c := newT(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	src := &scriptedSource{catchUp: func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return context.Cause(ctx)
	}}
	args := []any{"GET", "k"}
	c.Store(c.Reserve("k", src), args, resp.BulkString("v"), time.Hour)
	if _, ok, err := c.Get(ctx, "k", args); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("Get: hit %v, err %v; want context.Canceled", ok, err)
	}
}

// The source is the one the read was reserved on, whatever else is cached.
func TestEntriesKeepTheirSource(t *testing.T) {
	c := newT(t, Options{})
	lost := &scriptedSource{catchUp: func(context.Context) error { return errLost }}
	live := &scriptedSource{current: true}
	c.Store(c.Reserve("a", lost), []any{"GET", "a"}, resp.BulkString("a"), time.Hour)
	c.Store(c.Reserve("b", live), []any{"GET", "b"}, resp.BulkString("b"), time.Hour)
	if _, ok := getBG(c, "a", []any{"GET", "a"}); ok {
		t.Error("hit from a lost source")
	}
	if _, ok := getBG(c, "b", []any{"GET", "b"}); !ok {
		t.Error("miss from a current source")
	}
}

// An entry invalidated after the lookup found it, and before its source said it was
// current (another caller's catch-up applied the push meanwhile), is not served: the
// reply it holds was removed by a push that had arrived before the source caught up.
func TestGetSeesARemovalBehindTheLookup(t *testing.T) {
	c := newT(t, Options{})
	args := []any{"GET", "k"}
	src := &scriptedSource{current: true}
	src.onCurrent = func() {
		src.onCurrent = nil
		c.Invalidate("k")
	}
	c.Store(c.Reserve("k", src), args, resp.BulkString("old"), time.Hour)
	if v, ok := getBG(c, "k", args); ok {
		t.Fatalf("served %s, invalidated before the source was found current", v)
	}
	// A newer entry stored behind the removal is found by the second look.
	c.Store(c.Reserve("k", src), args, resp.BulkString("old"), time.Hour)
	src.onCurrent = func() {
		src.onCurrent = nil
		c.Store(c.Reserve("k", src), args, resp.BulkString("new"), time.Hour)
	}
	if v, ok := getBG(c, "k", args); !ok || v.String() != resp.BulkString("new").String() {
		t.Fatalf("got %s, %v; want the entry that replaced the one found first", v, ok)
	}
}

// A catch-up that outlasts the lag bound still serves the entry it left: the source is
// current as of the catch-up's start, after the call began, so asking Current again
// (false by then) must not turn the hit into a miss and a read from the server.
func TestGetServesWhatASlowCatchUpLeft(t *testing.T) {
	c := newT(t, Options{})
	src := &scriptedSource{}
	src.onCurrent = func() { src.current = false } // never current when asked
	args := []any{"GET", "k"}
	c.Store(c.Reserve("k", src), args, resp.BulkString("v"), time.Hour)
	if _, ok, err := c.Get(context.Background(), "k", args); !ok || err != nil || src.catchUps != 1 {
		t.Fatalf("Get: hit %v, err %v, %d catch-ups; want a hit after 1 catch-up", ok, err, src.catchUps)
	}
}
