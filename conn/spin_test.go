package conn

import (
	"testing"
	"time"
)

// scriptedWaits runs waits, in budgets, through a spinWait's accounting as awaitBytes
// leaves them: a wait that polls finds its reply within the budget or runs out past
// it; a wait that does not poll parks. It reports which waits polled. The clock is the
// script's, so the accounting is tested without the scheduler's delays, which a
// loaded machine adds to every real reply.
func scriptedWaits(s *spinWait, waits []float64) []bool {
	polled := make([]bool, len(waits))
	for i, w := range waits {
		wait := int64(w * float64(s.budget))
		polled[i] = s.polling()
		s.found = polled[i] && wait <= int64(s.budget)
		s.missed = polled[i] && !s.found
		s.record(wait)
	}
	return polled
}

// repeat returns n copies of the waits in unit, one after another.
func repeat(n int, unit ...float64) []float64 {
	var out []float64
	for range n {
		out = append(out, unit...)
	}
	return out
}

func countPolled(polled []bool) int {
	n := 0
	for _, p := range polled {
		if p {
			n++
		}
	}
	return n
}

// The rules of spin.go's comment, each on a script of waits: a wait that polls in vain
// right after another counts spinMissPenalty budgets, a lone one does not, a parked
// wait within the budget clears the misses, and the average stops the polling above
// spinStopFactor budgets.
func TestSpinAccounting(t *testing.T) {
	tests := []struct {
		name  string
		waits []float64
		// check reads the polled waits of the script; it returns what is wrong, or "".
		check func(polled []bool) string
	}{
		{
			name:  "replies within the budget always poll",
			waits: repeat(24, 0.2),
			check: func(polled []bool) string {
				if n := countPolled(polled); n != len(polled) {
					return "only some waits polled"
				}
				return ""
			},
		},
		{
			// Two slow replies first, whose second is charged the penalty and stops
			// the polling; then a slow reply before every fast one. The fast replies
			// parked meanwhile must clear the misses, or each later slow reply is
			// charged the penalty again and the fast ones stay parked.
			name:  "a lone miss between fast replies keeps the polling",
			waits: append([]float64{1.5, 1.5}, repeat(12, 1.5, 0.2)...),
			check: func(polled []bool) string {
				fast := 0
				for i := 3; i < len(polled); i += 2 {
					if polled[i] {
						fast++
					}
				}
				if fast < 10 {
					return "fewer than 10 of 12 fast replies polled"
				}
				return ""
			},
		},
		{
			// A server a little over the budget (a same-rack network): without the
			// penalty the average stays under twice the budget and every wait polls
			// its whole budget in vain.
			name:  "replies a little over the budget stop the polling",
			waits: repeat(24, 1.5),
			check: func(polled []bool) string {
				if n := countPolled(polled); n > len(polled)/2 {
					return "more than half the waits polled in vain"
				}
				return ""
			},
		},
		{
			name:  "replies over twice the budget stop the polling",
			waits: repeat(24, 3),
			check: func(polled []bool) string {
				if n := countPolled(polled[12:]); n > 2 {
					return "the polling went on after a dozen slow replies"
				}
				return ""
			},
		},
		{
			// Parked waits bring the average back, and the polling with it.
			name:  "fast replies after slow ones poll again",
			waits: append(repeat(8, 3), repeat(24, 0.2)...),
			check: func(polled []bool) string {
				if n := countPolled(polled[len(polled)-12:]); n != 12 {
					return "the last dozen fast replies did not all poll"
				}
				return ""
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &spinWait{budget: 50 * time.Microsecond}
			polled := scriptedWaits(s, tt.waits)
			if msg := tt.check(polled); msg != "" {
				t.Errorf("%s: polled %v", msg, polled)
			}
		})
	}
}
