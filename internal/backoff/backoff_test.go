package backoff

import (
	"testing"
	"time"
)

// script sets Jitter to f for the test's duration.
func script(t *testing.T, f func(time.Duration) time.Duration) {
	saved := Jitter
	Jitter = f
	t.Cleanup(func() { Jitter = saved })
}

var (
	least = func(time.Duration) time.Duration { return 0 }
	most  = func(n time.Duration) time.Duration { return n }
)

// TestCeiling checks the doubling, the cap, that a huge n neither overflows nor wraps
// below the cap, and that an n below 1 does not panic.
func TestCeiling(t *testing.T) {
	for _, tc := range []struct {
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{50 * time.Millisecond, 5 * time.Second, 1, 50 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, 2, 100 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, 7, 3200 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, 8, 5 * time.Second},
		{50 * time.Millisecond, 5 * time.Second, 62, 5 * time.Second},
		{50 * time.Millisecond, 5 * time.Second, 1 << 30, 5 * time.Second},
		{time.Nanosecond, time.Duration(1<<63 - 1), 62, 1 << 61},
		{time.Nanosecond, time.Duration(1<<63 - 1), 63, time.Duration(1<<63 - 1)},
		{10 * time.Millisecond, 10 * time.Millisecond, 5, 10 * time.Millisecond},
		// n below 1 counts as the first retry (a negative shift would panic).
		{50 * time.Millisecond, 5 * time.Second, 0, 50 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, -1, 50 * time.Millisecond},
		{50 * time.Millisecond, 5 * time.Second, -1 << 62, 50 * time.Millisecond},
	} {
		if got := Ceiling(tc.base, tc.max, tc.n); got != tc.want {
			t.Errorf("Ceiling(%v, %v, %d) = %v, want %v", tc.base, tc.max, tc.n, got, tc.want)
		}
	}
}

// TestEqualSchedule checks the reconnection schedule's bounds: between half and all of
// 50ms·2^(n-1), capped at 5s.
func TestEqualSchedule(t *testing.T) {
	ceilings := []time.Duration{50, 100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for _, tc := range []struct {
		name   string
		jitter func(time.Duration) time.Duration
		part   func(time.Duration) time.Duration
	}{
		{"least", least, func(c time.Duration) time.Duration { return c / 2 }},
		{"most", most, func(c time.Duration) time.Duration { return c }},
	} {
		script(t, tc.jitter)
		for i, ms := range ceilings {
			if got, want := Equal(50*time.Millisecond, 5*time.Second, i+1), tc.part(ms*time.Millisecond); got != want {
				t.Errorf("%s: Equal(%d) = %v, want %v", tc.name, i+1, got, want)
			}
		}
		if got, want := Equal(50*time.Millisecond, 5*time.Second, 1000), tc.part(5*time.Second); got != want {
			t.Errorf("%s: Equal(1000) = %v, want %v", tc.name, got, want)
		}
	}
}

// TestRandomBounds checks the unscripted Jitter's waits against their bounds.
func TestRandomBounds(t *testing.T) {
	seen := map[bool]bool{}
	for n := 1; n < 2000; n++ {
		c := Ceiling(time.Millisecond, 64*time.Millisecond, n%10+1)
		if d := Full(time.Millisecond, 64*time.Millisecond, n%10+1); d < 0 || d > c {
			t.Fatalf("Full %v outside [0, %v]", d, c)
		}
		d := Equal(time.Millisecond, 64*time.Millisecond, n%10+1)
		if d < c/2 || d > c {
			t.Fatalf("Equal %v outside [%v, %v]", d, c/2, c)
		}
		seen[d < c*3/4] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("Equal's waits all fell on one side of the middle: %v", seen)
	}
}
