package testkit

import (
	"errors"
	"slices"
	"sync"

	"github.com/respire/respire/observe"
)

// ConnEvents is an Observer that keeps the Conn events of one kind it is given
// (Kind), for tests of what a client reports: the re-authentications of a credential
// rotation, the channels a subscription lost, say. Set Kind before use; it is safe for
// concurrent use.
type ConnEvents struct {
	observe.Base
	Kind   observe.ConnKind
	mu     sync.Mutex
	events []observe.Conn
}

// Conn keeps e if it is of the kind kept.
func (r *ConnEvents) Conn(e observe.Conn) {
	if e.Kind != r.Kind {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns the events kept so far, in the order they came.
func (r *ConnEvents) Events() []observe.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Errs returns the errors of the events kept so far (nil ones included), in order.
func (r *ConnEvents) Errs() []error {
	var errs []error
	for _, e := range r.Events() {
		errs = append(errs, e.Err)
	}
	return errs
}

// Matching returns the errors kept so far that match target (errors.Is).
func (r *ConnEvents) Matching(target error) []error {
	var out []error
	for _, err := range r.Errs() {
		if errors.Is(err, target) {
			out = append(out, err)
		}
	}
	return out
}
