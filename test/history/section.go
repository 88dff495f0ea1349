package history

import (
	"fmt"
	"sync"
	"time"
)

// Section is a critical section that logs who enters and leaves it. A holder
// calls Enter right after its lock said it holds, and Exit before releasing
// (or when its lease's context ends). Each entry overlapping another holder's
// is a violation.
type Section struct {
	r *Recorder

	mu     sync.Mutex
	inside map[int]*Call // holder → its open stay
	found  []Violation
}

// NewSection returns an empty critical section timed by r. Stays are
// recorded in r as operations of kind "hold".
func NewSection(r *Recorder) *Section {
	return &Section{r: r, inside: make(map[int]*Call)}
}

// Enter records holder going in. Another holder already inside is a
// violation, counted at once so it cannot be missed by a later interleaving.
func (s *Section) Enter(holder int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other := range s.inside {
		if other != holder {
			s.found = append(s.found, Violation{Checker: "exclusive", Detail: fmt.Sprintf("holder %d entered at %v while holder %d was inside", holder, s.r.Now(), other)})
		}
	}
	if _, ok := s.inside[holder]; !ok {
		s.inside[holder] = s.r.Begin(holder, "hold", nil)
	}
}

// Exit records holder going out. Exiting without having entered is ignored.
func (s *Section) Exit(holder int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.inside[holder]; ok {
		c.End(OK, nil, nil)
		delete(s.inside, holder)
	}
}

// Violations returns the overlaps seen by Enter so far.
func (s *Section) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Violation(nil), s.found...)
}

// CheckExclusive finds overlapping stays of different holders among the
// operations of kind "hold" (as recorded by a Section, or added with Add for
// holders outside this process). A stay is the closed interval [Call, Return].
func CheckExclusive(ops []Op) []Violation {
	var holds []Op
	for _, op := range ops {
		if op.Kind == "hold" {
			holds = append(holds, op)
		}
	}
	// ops come sorted by Call: each stay need only be compared with the stays
	// still open when it began. Stays that only touch (one exits at the instant
	// the other enters) do not overlap: a Section orders them under its mutex.
	var found []Violation
	var open []Op
	for _, h := range holds {
		kept := open[:0]
		for _, o := range open {
			if o.Return > h.Call {
				kept = append(kept, o)
			}
		}
		open = kept
		for _, o := range open {
			if o.Client != h.Client {
				found = append(found, Violation{Checker: "exclusive", Detail: fmt.Sprintf("holders %d and %d inside together: %v overlaps %v", o.Client, h.Client, span(o), span(h))})
			}
		}
		open = append(open, h)
	}
	return found
}

func span(op Op) string {
	return fmt.Sprintf("[%v, %v]", op.Call.Round(time.Microsecond), op.Return.Round(time.Microsecond))
}
